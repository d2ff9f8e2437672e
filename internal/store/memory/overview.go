package memory

// Overviews (store.Overview): schedule activity and workflow run counts,
// from the maps.

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/store"
)

func (s *Store) ScheduleOverview(_ context.Context, since time.Time) (*store.ScheduleOverview, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sched()
	active, running := map[string]int{}, map[string]int{}
	for _, r := range st.runs {
		if r.heartbeat.After(since) || r.Finished.After(since) {
			active[r.ReplicaID]++
		}
		if r.Status == store.ScheduleRunning {
			running[r.ReplicaID]++
		}
	}
	o := &store.ScheduleOverview{Active: replicaRuns(active), Running: replicaRuns(running), Latest: []store.LatestClaim{}}
	latest := map[string]store.LatestClaim{}
	for _, c := range st.claims {
		if c.claimedAt.After(since) {
			o.RecentClaims++
		}
		l, ok := latest[c.Schedule]
		if !ok || c.claimedAt.After(l.ClaimedAt) || c.claimedAt.Equal(l.ClaimedAt) && c.ReplicaID < l.ReplicaID {
			latest[c.Schedule] = store.LatestClaim{Schedule: c.Schedule, ReplicaID: c.ReplicaID, ClaimedAt: c.claimedAt}
		}
	}
	for _, l := range latest {
		o.Latest = append(o.Latest, l)
	}
	slices.SortFunc(o.Latest, func(a, b store.LatestClaim) int { return cmp.Compare(a.Schedule, b.Schedule) })
	return o, nil
}

func replicaRuns(m map[string]int) []store.ReplicaRuns {
	out := []store.ReplicaRuns{}
	for id, n := range m {
		out = append(out, store.ReplicaRuns{ReplicaID: id, Runs: n})
	}
	slices.SortFunc(out, func(a, b store.ReplicaRuns) int { return cmp.Compare(a.ReplicaID, b.ReplicaID) })
	return out
}

func (s *Store) CountExecutions(_ context.Context, statuses ...store.ExecStatus) (map[store.ExecStatus]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[store.ExecStatus]int, len(statuses))
	for _, st := range statuses {
		out[st] = 0
	}
	for _, x := range s.wf().execs {
		if _, ok := out[x.Status]; ok {
			out[x.Status]++
		}
	}
	return out, nil
}
