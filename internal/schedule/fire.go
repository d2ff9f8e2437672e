// Firing one tick: coordination (claim or not), the catch-up rule, the
// overlap policy, and the run itself with its record.

package schedule

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// tick decides and, if this replica is to run it, starts the run of e at
// tick at. missed says the tick went by while nobody fired it.
func (s *Scheduler) tick(ctx context.Context, e *entry, at time.Time, missed bool) {
	outcome := OutcomeSingle
	if e.coord == AdvisoryLock {
		won, err := s.cfg.Store.ClaimScheduleTick(ctx, Claim{Schedule: e.Name, ScheduledAt: at, ReplicaID: s.cfg.ReplicaID})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("schedule: claim failed, tick not fired by this replica", "schedule", e.Name, "scheduledAt", at, "err", err)
			}
			return
		}
		if !won {
			if !missed { // a missed tick that someone claimed was not missed after all
				s.record(ctx, e, at, OutcomeLostLock)
			}
			return
		}
		outcome = OutcomeWonLock
	}
	if missed && !e.CatchUp {
		s.record(ctx, e, at, OutcomeMissed)
		return
	}
	if j := s.admit(ctx, e, at, outcome); j != nil {
		s.goHeld(func() { _ = s.run(ctx, j) })
	}
}

// admit applies e's overlap policy to a tick this replica fires. It returns
// the run to start, or nil when the tick is skipped.
func (s *Scheduler) admit(ctx context.Context, e *entry, at time.Time, outcome Outcome) *job {
	if e.Overlap == OverlapParallel {
		return s.begin(ctx, e, at, outcome, StatusRunning)
	}
	e.mu.Lock()
	localBusy, localBuffered := e.inflight > 0, e.buffered
	e.mu.Unlock()
	a, err := s.activity(ctx, e.Name)
	if err != nil {
		s.log.Warn("schedule: cannot see runs on other replicas, judging overlap locally", "schedule", e.Name, "err", err)
	}
	running, queued := a.Running > 0 || localBusy, a.Queued > 0 || localBuffered
	switch {
	case !running && !queued:
		return s.begin(ctx, e, at, outcome, StatusRunning)
	case e.Overlap == OverlapQueue && !queued:
		return s.begin(ctx, e, at, OutcomeQueued, StatusQueued)
	default:
		s.record(ctx, e, at, OutcomeSkippedOverlap)
		return nil
	}
}

// stale is how long a live row may go without a heartbeat before it no
// longer counts.
func (s *Scheduler) stale() time.Duration { return 3 * s.cfg.Heartbeat }

// activity counts the live runs of schedule, on every replica, whose
// heartbeat is younger than stale by the store's clock.
func (s *Scheduler) activity(ctx context.Context, schedule string) (Activity, error) {
	now, err := s.cfg.Store.Now(ctx)
	if err != nil {
		return Activity{}, err
	}
	return s.cfg.Store.ActiveScheduleRuns(ctx, schedule, now.Add(-s.stale()))
}

// record writes a row for a tick that does not run here.
func (s *Scheduler) record(ctx context.Context, e *entry, at time.Time, o Outcome) {
	e.count(o, 1)
	r := Run{Schedule: e.Name, ScheduledAt: at, ReplicaID: s.cfg.ReplicaID, Outcome: o, Status: StatusSkipped}
	if _, err := s.cfg.Store.InsertScheduleRun(ctx, r); err != nil && ctx.Err() == nil {
		s.log.Warn("schedule: cannot record tick", "schedule", e.Name, "scheduledAt", at, "outcome", o, "err", err)
	}
	s.log.Debug("schedule tick", "schedule", e.Name, "scheduledAt", at, "outcome", o)
}

// job is a run admitted on this replica, running or buffered.
type job struct {
	e       *entry
	at      time.Time
	outcome Outcome
	id      int64 // 0 when the row could not be written
	queued  bool
}

// begin records the run and reserves its place (in flight, or the buffer)
// before returning, so the next tick's overlap check sees it.
func (s *Scheduler) begin(ctx context.Context, e *entry, at time.Time, o Outcome, st Status) *job {
	e.count(o, 1)
	j := &job{e: e, at: at, outcome: o, queued: st == StatusQueued}
	e.mu.Lock()
	if j.queued {
		e.buffered = true
	} else {
		e.inflight++
	}
	e.mu.Unlock()
	id, err := s.cfg.Store.InsertScheduleRun(ctx, Run{Schedule: e.Name, ScheduledAt: at, ReplicaID: s.cfg.ReplicaID, Outcome: o, Status: st})
	if err != nil {
		s.log.Warn("schedule: cannot record run, running it anyway", "schedule", e.Name, "scheduledAt", at, "err", err)
	}
	j.id = id
	return j
}

// run waits for its turn if queued, runs the function and records the end.
// It returns the function's error.
func (s *Scheduler) run(ctx context.Context, j *job) error {
	e := j.e
	if j.queued {
		if !s.awaitTurn(ctx, j) {
			e.mu.Lock()
			e.buffered = false
			e.mu.Unlock()
			s.finish(ctx, j, StatusCancelled, "replica shut down before the queued tick ran")
			return ctx.Err()
		}
	}
	s.log.Info("schedule fired", "schedule", e.Name, "scheduledAt", j.at, "outcome", j.outcome)
	err := s.call(ctx, e, j.at)
	status, text := StatusSucceeded, ""
	if err != nil {
		status, text = StatusFailed, err.Error()
		s.log.Error("schedule run failed", "schedule", e.Name, "scheduledAt", j.at, "err", err)
	}
	s.finish(ctx, j, status, text)
	e.ended()
	return err
}

// awaitTurn holds a queued tick until no run of its schedule is running on
// any replica, then moves it to running. False when ctx ends first.
func (s *Scheduler) awaitTurn(ctx context.Context, j *job) bool {
	e := j.e
	poll := time.NewTicker(s.cfg.QueuePoll)
	defer poll.Stop()
	for {
		if ctx.Err() != nil {
			return false
		}
		e.mu.Lock()
		localBusy := e.inflight > 0
		e.mu.Unlock()
		if !localBusy {
			a, err := s.activity(ctx, e.Name)
			if err == nil && a.Running == 0 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-e.wake:
		case <-poll.C:
		}
	}
	e.mu.Lock()
	e.buffered = false
	e.inflight++
	e.mu.Unlock()
	if j.id != 0 {
		if _, err := s.cfg.Store.StartScheduleRun(ctx, j.id); err != nil {
			s.log.Warn("schedule: cannot mark queued run started", "schedule", e.Name, "err", err)
		}
	}
	return true
}

// finish records the end of a run even when ctx has ended (shutdown).
func (s *Scheduler) finish(ctx context.Context, j *job, st Status, text string) {
	if j.id == 0 {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.cfg.Store.FinishScheduleRun(fctx, j.id, st, text); err != nil {
		s.log.Warn("schedule: cannot record end of run", "schedule", j.e.Name, "scheduledAt", j.at, "err", err)
	}
}

// call runs e's function, turning a panic into an error (the stack goes to
// the log, not the record).
func (s *Scheduler) call(ctx context.Context, e *entry, at time.Time) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("schedule function panicked", "schedule", e.Name, "scheduledAt", at, "panic", p, "stack", string(debug.Stack()))
			err = errs.New(errs.CodeHandlerPanic, "schedule function panicked: %v", p)
		}
	}()
	return e.Func(ctx, at)
}
