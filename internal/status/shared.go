// The footer: shared state read from the database — schedule activity and
// claims, in-flight workflow runs, dead letters, the oldest undelivered
// message and the backlog of entity types no live runner hosts. Every part is read on its own; a part that fails is named in
// Errors and the rest is still shown.

package status

import (
	"context"
	"fmt"
	"time"

	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/store"
)

// ActiveWindow is how far back "recent" schedule activity reaches, in seconds.
const ActiveWindow = 300

// readShared reads the footer from d; a runner whose heartbeat is stale
// old hosts nothing.
func readShared(ctx context.Context, d store.Driver, stale time.Duration) *Shared {
	sh := &Shared{ActiveWindowSeconds: ActiveWindow, Errors: []string{}, Messages: MessageState{UnhostedBacklog: []UnhostedType{}}}
	if ds, err := d.DrainStats(ctx); err != nil {
		sh.Errors = append(sh.Errors, fmt.Sprintf("messages: %v", err))
	} else {
		sh.Messages.DeadLetters, sh.Messages.OldestUndeliveredSeconds = ds.Dead, ds.OldestUndelivered.Seconds()
		if runners, err := d.ListRunners(ctx); err != nil {
			sh.Errors = append(sh.Errors, fmt.Sprintf("unhosted backlog: %v", err))
		} else {
			for _, c := range inspect.UnhostedConditions(ds, store.HostedTypes(runners, stale)) {
				sh.Messages.UnhostedBacklog = append(sh.Messages.UnhostedBacklog, UnhostedType{EntityType: c.EntityType, Messages: c.Messages, OldestSeconds: c.OldestSeconds})
			}
		}
	}
	if s, err := readSchedules(ctx, d); err != nil {
		sh.Errors = append(sh.Errors, fmt.Sprintf("schedules: %v", err))
	} else {
		sh.Schedules = s
	}
	if w, err := readWorkflows(ctx, d); err != nil {
		sh.Errors = append(sh.Errors, fmt.Sprintf("workflows: %v", err))
	} else {
		sh.Workflows = w
	}
	return sh
}

// schedulesRecorded reports whether any schedule left a row in the
// schedule tables: the migrations create them on every database, and the
// footer of one where no schedule ever ran says so (Schedules null) rather
// than show zeros. A schedule's definition row stays, so once one ran the
// footer shows its activity for good.
func schedulesRecorded(ctx context.Context, d store.Driver) (bool, error) {
	sums, err := d.ScheduleSummaries(ctx)
	return len(sums) > 0, err
}

// readSchedules is the schedule activity of the last ActiveWindow
// seconds by the store's clock, and each schedule's latest claim with its
// age; nil where the store has no schedule tables or no schedule ran.
func readSchedules(ctx context.Context, d store.Driver) (*ScheduleState, error) {
	now, err := d.Now(ctx)
	if err != nil {
		return nil, err
	}
	o, err := d.ScheduleOverview(ctx, now.Add(-ActiveWindow*time.Second))
	if err != nil || o == nil {
		return nil, err
	}
	if ok, err := schedulesRecorded(ctx, d); err != nil || !ok {
		return nil, err
	}
	s := &ScheduleState{ActiveReplicas: replicaRuns(o.Active), RunningByReplica: replicaRuns(o.Running), RecentClaims: o.RecentClaims, LatestClaims: []Claim{}}
	for _, r := range s.RunningByReplica {
		s.Running += r.Runs
	}
	for _, c := range o.Latest {
		s.LatestClaims = append(s.LatestClaims, Claim{Schedule: c.Schedule, ReplicaID: c.ReplicaID, AgeSeconds: max(now.Sub(c.ClaimedAt).Seconds(), 0)})
	}
	return s, nil
}

func replicaRuns(in []store.ReplicaRuns) []ReplicaRuns {
	out := make([]ReplicaRuns, 0, len(in))
	for _, r := range in {
		out = append(out, ReplicaRuns{ReplicaID: r.ReplicaID, Runs: r.Runs})
	}
	return out
}

// readWorkflows counts the runs in flight; nil where the store has no
// workflow tables.
func readWorkflows(ctx context.Context, ov store.Overview) (*WorkflowCounts, error) {
	n, err := ov.CountExecutions(ctx, store.ExecRunning, store.ExecSuspended)
	if err != nil || n == nil {
		return nil, err
	}
	return &WorkflowCounts{Running: n[store.ExecRunning], Suspended: n[store.ExecSuspended]}, nil
}
