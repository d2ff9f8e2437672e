// Firing one tick: coordination (claim or not), the catch-up rule, the
// overlap policy, and the run itself with its record.

package schedule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"runtime/debug"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// tick decides and, if this replica is to run it, starts the run of e at
// tick at. missed says the tick went by while nobody fired it. It reports
// whether this replica won the tick's claim (advisoryLock).
func (s *Scheduler) tick(ctx context.Context, e *entry, at time.Time, missed bool) bool {
	outcome := OutcomeSingle
	if e.coord == AdvisoryLock {
		won, err := s.cfg.Store.ClaimScheduleTick(ctx, Claim{Schedule: e.Name, ScheduledAt: at, ReplicaID: s.cfg.ReplicaID})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("schedule: claim failed, tick not fired by this replica", "schedule", e.Name, "scheduledAt", at, "err", err)
			}
			return false
		}
		if !won {
			if !missed { // a missed tick that someone claimed was not missed after all
				s.record(ctx, e, at, OutcomeLostLock)
			}
			return false
		}
		outcome = OutcomeWonLock
	}
	s.settle(ctx, e, at, missed, outcome, false)
	return e.coord == AdvisoryLock
}

// settle decides a tick this replica fires: missed, skipped or run. decided
// says this replica holds the tick's decision already (a takeover).
func (s *Scheduler) settle(ctx context.Context, e *entry, at time.Time, missed bool, outcome Outcome, decided bool) {
	if missed && !e.CatchUp {
		if decided || s.decide(ctx, e, at) {
			s.record(ctx, e, at, OutcomeMissed)
		}
		return
	}
	if j := s.admit(ctx, e, at, outcome, decided); j != nil {
		s.goHeld(func() { _ = s.run(ctx, j) })
	}
}

// decide takes the decision of tick at for this replica, in advisoryLock
// coordination: a second claim row (decisionClaim), taken by the winner of
// the tick's claim just before it records what it did or calls the
// function, or, when the winner died before that, by the survivor that
// takes the tick over (takeOver). Whoever inserts it first decides the
// tick; the other does nothing more with it. Other coordinations need no
// decision.
func (s *Scheduler) decide(ctx context.Context, e *entry, at time.Time) bool {
	if e.coord != AdvisoryLock {
		return true
	}
	won, err := s.cfg.Store.ClaimScheduleTick(ctx, decisionClaim(e.Name, at, s.cfg.ReplicaID))
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("schedule: claiming the tick's decision failed; a survivor takes the tick over", "schedule", e.Name, "scheduledAt", at, "err", err)
		}
		return false
	}
	if !won {
		s.log.Warn("schedule: another replica took the tick over while this one was stalled; not firing it", "schedule", e.Name, "scheduledAt", at)
	}
	return won
}

// decisionClaim is the claim row of tick at's decision. Its schedule
// column is a name no schedule can have ('#' is not allowed in names;
// long names are hashed to fit the column), so claims counted per schedule
// and listings of schedules leave it out.
func decisionClaim(name string, at time.Time, replica string) Claim {
	const prefix = store.ScheduleDecisionPrefix
	if len(prefix)+len(name) > maxNameLen {
		sum := sha256.Sum256([]byte(name))
		name = hex.EncodeToString(sum[:16])
	}
	return Claim{Schedule: prefix + name, ScheduledAt: at, ReplicaID: replica}
}

// takeoverGrace is how long after a tick a survivor takes it over when its
// winner did not decide it: long enough for a dead winner's live rows to
// stop counting in overlap checks (stale), plus a heartbeat.
func (s *Scheduler) takeoverGrace() time.Duration { return s.stale() + s.cfg.Heartbeat }

// takeOver runs on the replica that won a tick: it takes over the ticks
// that reached takeoverGrace of age since the previous tick (prev, at] and
// whose winner never decided them (it died between its claim and its
// decision). Each is fired late, once, whatever CatchUp says: a replica
// was up to claim it. A tick nobody claimed (no replica reached it) is
// handled as missed. Each tick is looked at by the winner of one later
// tick: two inserts that fail, in the usual case where its winner decided.
// Ticks before boot, this replica's start, are bootMissed's.
func (s *Scheduler) takeOver(ctx context.Context, e *entry, boot, prev, at time.Time) {
	grace := s.takeoverGrace()
	n := 0
	for t := e.spec.Next(later(prev.Add(-grace), boot)); !t.IsZero() && !t.After(at.Add(-grace)) && n <= s.cfg.CatchUpLimit; t, n = e.spec.Next(t), n+1 {
		claimed, err := s.cfg.Store.ClaimScheduleTick(ctx, Claim{Schedule: e.Name, ScheduledAt: t, ReplicaID: s.cfg.ReplicaID})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("schedule: cannot look for an undecided tick", "schedule", e.Name, "scheduledAt", t, "err", err)
			}
			continue
		}
		if claimed { // nobody had: no replica got to it
			s.settle(ctx, e, t, true, OutcomeWonLock, false)
			continue
		}
		won, err := s.cfg.Store.ClaimScheduleTick(ctx, decisionClaim(e.Name, t, s.cfg.ReplicaID))
		if err != nil || !won {
			if err != nil && ctx.Err() == nil {
				s.log.Warn("schedule: cannot look for an undecided tick", "schedule", e.Name, "scheduledAt", t, "err", err)
			}
			continue
		}
		s.log.Warn("schedule: the replica that claimed a tick never fired it (it died or stalled); firing it late", "schedule", e.Name, "scheduledAt", t)
		s.settle(ctx, e, t, false, OutcomeWonLock, true)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// admit applies e's overlap policy to a tick this replica fires. It returns
// the run to start, or nil when the tick is skipped (or, not decided yet,
// decided by another replica).
func (s *Scheduler) admit(ctx context.Context, e *entry, at time.Time, outcome Outcome, decided bool) *job {
	if e.Overlap == OverlapParallel {
		return s.begin(ctx, e, at, outcome, StatusRunning, decided)
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
		return s.begin(ctx, e, at, outcome, StatusRunning, decided)
	case e.Overlap == OverlapQueue && !queued:
		return s.begin(ctx, e, at, OutcomeQueued, StatusQueued, decided)
	default:
		if decided || s.decide(ctx, e, at) {
			s.record(ctx, e, at, OutcomeSkippedOverlap)
		}
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
	decided bool // this replica holds the tick's decision (see decide)
}

// begin records the run and reserves its place (in flight, or the buffer)
// before returning, so the next tick's overlap check sees it.
func (s *Scheduler) begin(ctx context.Context, e *entry, at time.Time, o Outcome, st Status, decided bool) *job {
	e.count(o, 1)
	j := &job{e: e, at: at, outcome: o, queued: st == StatusQueued, decided: decided}
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
	// Decided after the row is written, right before the function runs
	// (or waits for its turn): a winner that dies before this point leaves
	// the tick to a survivor's takeover, one that dies after it has begun
	// the tick, as far as anyone can tell.
	if !j.decided && !s.decide(ctx, e, j.at) {
		e.mu.Lock()
		if j.queued {
			e.buffered = false
		}
		e.mu.Unlock()
		s.finish(ctx, j, StatusCancelled, "another replica took the tick over")
		if !j.queued {
			e.ended()
		}
		return nil
	}
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
