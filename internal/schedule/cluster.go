// The seam to the workflow engine for cluster coordination: the engine owns
// the clock and fires each tick once, on the owner of the schedule's shard.

package schedule

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// ClusterFirer is implemented by the workflow engine. For a schedule in
// cluster mode the Scheduler arms no timer of its own: it hands the schedule
// to ScheduleCluster and the engine fires it.
type ClusterFirer interface {
	// ScheduleCluster takes over s until ctx ends (this replica stopping).
	// From then on, for every tick of s.Spec, the runner that owns the
	// schedule's shard calls s.Fire(ctx, tick) once, durably: a tick keyed by
	// s.Key(tick) that was started is not started again elsewhere, and
	// ownership moves to a live runner when its owner dies. Ticks that went
	// by while ownership moved (the owner died or handed the shard over
	// before it started them) are passed to Fire late, once, whatever
	// s.CatchUp says: the fleet was up. A tick the engine could not make
	// sure of (a store that did not answer) is passed to s.Missed. It
	// returns once the schedule is registered with the engine; an error
	// fails the app's boot.
	ScheduleCluster(ctx context.Context, s ClusterSchedule) error
}

// ClusterSchedule is a cluster-mode schedule as the engine sees it.
type ClusterSchedule struct {
	Name    string
	Spec    Spec // Spec.Next gives the ticks, the same on every runner
	CatchUp bool
	// Fire records the tick with outcome cluster (or skippedOverlap/queued
	// under the overlap policy, judged across replicas), runs the function
	// and returns its error once it has finished.
	Fire func(ctx context.Context, scheduledAt time.Time) error
	// Missed records a tick the engine will not fire (outcome missed).
	Missed func(ctx context.Context, scheduledAt time.Time) error
	// Begun reports whether the tick has a record already: a delivery of
	// its run that died before journaling its firing had begun it (or
	// recorded it skipped), so a later delivery does not fire it again.
	Begun func(ctx context.Context, scheduledAt time.Time) (bool, error)
}

// Key is the tick's idempotency key for the engine, name@unixSecond.
func (c ClusterSchedule) Key(scheduledAt time.Time) string { return ClaimKey(c.Name, scheduledAt) }

// clusterAvailable reports whether cluster mode can work here: an engine is
// wired and the store is one several runners share.
func (s *Scheduler) clusterAvailable() bool { return s.clusterUnavailableReason() == "" }

func (s *Scheduler) clusterUnavailableReason() string {
	switch {
	case s.cfg.Cluster == nil && defaultCoordination(s.cfg.Store.Dialect()) == AdvisoryLock:
		return "this instance runs no cluster of runners (single-process runner storage, VOLTRO_WORKFLOW_RUNNER_STORAGE=memory) to fire cluster schedules"
	case s.cfg.Cluster == nil:
		return "no workflow engine is wired to fire cluster schedules"
	case !s.cfg.Store.Dialect().Shared():
		return "the " + string(s.cfg.Store.Dialect()) + " store has no cluster storage"
	}
	return ""
}

// clusterFallback is the coordination a cluster schedule gets where cluster
// mode cannot work: advisoryLock on a store other processes share, so each
// tick still fires once across the instances on it, single elsewhere.
func (s *Scheduler) clusterFallback() Coordination {
	return defaultCoordination(s.cfg.Store.Dialect())
}

func (s *Scheduler) clusterSchedule(e *entry) ClusterSchedule {
	return ClusterSchedule{
		Name:    e.Name,
		Spec:    e.spec,
		CatchUp: e.CatchUp,
		Fire: func(ctx context.Context, at time.Time) error {
			if j := s.admit(ctx, e, at, OutcomeCluster); j != nil {
				return s.run(ctx, j)
			}
			return nil
		},
		Missed: func(ctx context.Context, at time.Time) error {
			s.record(ctx, e, at, OutcomeMissed)
			return nil
		},
		Begun: func(ctx context.Context, at time.Time) (bool, error) {
			last, ok, err := s.cfg.Store.LastScheduledAt(ctx, e.Name, at)
			return ok && last.Equal(at), err
		},
	}
}

// FireCluster fires tick at of the cluster-mode schedule name on this
// replica, as ClusterSchedule.Fire does; for engines that look schedules up
// by name when a durable timer wakes.
func (s *Scheduler) FireCluster(ctx context.Context, name string, at time.Time) error {
	s.mu.Lock()
	e, ok := s.entries[name]
	s.mu.Unlock()
	if !ok {
		return errs.New(errs.CodeNotFound, "schedule %q is not registered on this replica", name)
	}
	if e.coord != Cluster {
		return errs.New(errs.CodeInvalidArgument, "schedule %q is coordinated by %s, not cluster", name, e.coord)
	}
	return s.clusterSchedule(e).Fire(ctx, at)
}
