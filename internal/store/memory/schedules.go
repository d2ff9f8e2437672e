package memory

// Schedules (store.Schedules) in maps: claims, run rows and
// definitions, stamped with the store's clock. Several schedulers in one
// process may share one Store, which is how coordination is tested
// in-process.

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/store"
)

type schedState struct {
	claims map[string]schedClaim
	runs   []schedRun // in id order
	defs   map[string]store.ScheduleDefinition
	nextID int64
}

type schedClaim struct {
	store.ScheduleClaim
	claimedAt time.Time
}

type schedRun struct {
	store.ScheduleRun
	heartbeat time.Time
}

// sched returns the schedule state; the caller holds s.mu.
func (s *Store) sched() *schedState {
	if s.scheds == nil {
		s.scheds = &schedState{claims: map[string]schedClaim{}, defs: map[string]store.ScheduleDefinition{}}
	}
	return s.scheds
}

// run finds run id; the caller holds s.mu.
func (st *schedState) run(id int64) *schedRun {
	i, ok := slices.BinarySearchFunc(st.runs, id, func(r schedRun, id int64) int {
		switch {
		case r.ID < id:
			return -1
		case r.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return &st.runs[i]
}

func (s *Store) ClaimScheduleTick(_ context.Context, c store.ScheduleClaim) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sched()
	if _, taken := st.claims[c.Key()]; taken {
		return false, nil
	}
	st.claims[c.Key()] = schedClaim{ScheduleClaim: c, claimedAt: s.now()}
	return true, nil
}

func (s *Store) CountScheduleClaims(_ context.Context, schedule string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, c := range s.sched().claims {
		if c.Schedule == schedule {
			n++
		}
	}
	return n, nil
}

func (s *Store) DefineSchedule(_ context.Context, d store.ScheduleDefinition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.UpdatedAt = s.now()
	s.sched().defs[d.Name] = d
	return nil
}

func (s *Store) InsertScheduleRun(_ context.Context, r store.ScheduleRun) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sched()
	now := s.now()
	st.nextID++
	r.ID = st.nextID
	r.Started, r.Finished = time.Time{}, time.Time{}
	if r.Status != store.ScheduleQueued {
		r.Started = now
	}
	if !r.Status.Live() {
		r.Finished = now
	}
	st.runs = append(st.runs, schedRun{ScheduleRun: r, heartbeat: now})
	return r.ID, nil
}

func (s *Store) StartScheduleRun(_ context.Context, id int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.sched().run(id)
	if r == nil || r.Status != store.ScheduleQueued {
		return false, nil
	}
	now := s.now()
	r.Status, r.Started, r.heartbeat = store.ScheduleRunning, now, now
	return true, nil
}

func (s *Store) FinishScheduleRun(_ context.Context, id int64, status store.ScheduleStatus, errText string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.sched().run(id); r != nil {
		r.Status, r.Finished, r.Error = status, s.now(), errText
	}
	return nil
}

func (s *Store) HeartbeatScheduleRuns(_ context.Context, replicaID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	st := s.sched()
	for i := range st.runs {
		if r := &st.runs[i]; r.ReplicaID == replicaID && r.Status.Live() {
			r.heartbeat = now
		}
	}
	return nil
}

func (s *Store) ActiveScheduleRuns(_ context.Context, schedule string, since time.Time) (store.ScheduleActivity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var a store.ScheduleActivity
	for _, r := range s.sched().runs {
		if r.Schedule != schedule || !r.heartbeat.After(since) {
			continue
		}
		switch r.Status {
		case store.ScheduleRunning:
			a.Running++
		case store.ScheduleQueued:
			a.Queued++
		}
	}
	return a, nil
}

func (s *Store) LastScheduledAt(_ context.Context, schedule string, notAfter time.Time) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last time.Time
	found := false
	for _, r := range s.sched().runs {
		if r.Schedule == schedule && !r.ScheduledAt.After(notAfter) && (!found || r.ScheduledAt.After(last)) {
			last, found = r.ScheduledAt, true
		}
	}
	return last, found, nil
}

func (s *Store) ScheduleRuns(_ context.Context, schedule string, limit int) ([]store.ScheduleRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.ScheduleRun
	for _, r := range s.sched().runs {
		if r.Schedule == schedule {
			out = append(out, r.ScheduleRun)
		}
	}
	slices.SortFunc(out, func(a, b store.ScheduleRun) int {
		if c := b.ScheduledAt.Compare(a.ScheduledAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (s *Store) LatestScheduleRuns(_ context.Context, perSchedule int) (map[string][]store.ScheduleRun, error) {
	s.mu.Lock()
	var all []store.ScheduleRun
	for _, r := range s.sched().runs {
		all = append(all, r.ScheduleRun)
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b store.ScheduleRun) int {
		if c := cmp.Compare(a.Schedule, b.Schedule); c != 0 {
			return c
		}
		if c := b.ScheduledAt.Compare(a.ScheduledAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	out := map[string][]store.ScheduleRun{}
	for _, r := range all {
		if len(out[r.Schedule]) < perSchedule {
			out[r.Schedule] = append(out[r.Schedule], r)
		}
	}
	return out, nil
}

// laterRun reports whether a comes before b in ScheduleRuns order.
func laterRun(a, b store.ScheduleRun) bool {
	if c := a.ScheduledAt.Compare(b.ScheduledAt); c != 0 {
		return c > 0
	}
	return a.ID > b.ID
}

func (s *Store) ScheduleSummaries(context.Context) ([]store.ScheduleSummary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sched()
	sums := store.ScheduleSummaries{}
	for name, d := range st.defs {
		sums.Get(name).Definition = &d
	}
	for _, r := range st.runs {
		sm := sums.Get(r.Schedule)
		sm.Counts[r.Outcome]++
		if r.Outcome != store.ScheduleOutcomeLostLock && (sm.Last == nil || laterRun(r.ScheduleRun, *sm.Last)) {
			last := r.ScheduleRun
			sm.Last = &last
		}
	}
	return sums.Sorted(), nil
}

func (s *Store) CollectSchedules(_ context.Context, gc store.ScheduleGC) (store.ScheduleGCResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sched()
	var res store.ScheduleGCResult
	now := s.now()
	for k, c := range st.claims {
		if c.claimedAt.Before(gc.ClaimsBefore) {
			delete(st.claims, k)
			res.Claims++
		}
	}
	kept := st.runs[:0]
	for _, r := range st.runs {
		if r.Status.Live() && r.heartbeat.Before(gc.StaleBefore) {
			r.Status, r.Finished, r.Error = store.ScheduleAbandoned, now, store.ScheduleAbandonedError
			res.Abandoned++
		}
		if !r.Status.Live() && r.Finished.Before(gc.RunsBefore) {
			res.Runs++
			continue
		}
		kept = append(kept, r)
	}
	clear(st.runs[len(kept):])
	st.runs = kept
	return res, nil
}
