package voltrotest

// The clock loop: the one goroutine that moves an Env's virtual time. It
// moves it only when the App is quiet (see quiet) and someone wants it to
// move: a caller awaiting an outcome, or Advance. Each move goes to the
// next thing due and no further, then waits for the App to be quiet again,
// so what is due at one instant runs before anything due later.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/clock"
)

// recheck is how often the loop looks again without a change of the
// clock's counters; it catches work that arrives in the store from outside
// any hold. It paces the loop only: whether time moves is decided by
// quiet, never by how long the loop waited.
const recheck = 2 * time.Millisecond

type advanceReq struct {
	to   time.Time
	done chan struct{}
}

// loopState is what the clock loop tracks between its steps.
type loopState struct {
	adv   *advanceReq // an Advance under way
	waits []*wait     // WaitFor calls under way
	stuck uint64      // the clock generation at which nothing was due
}

// loop runs until ctx ends. Time may move while an Advance is under way, a
// WaitFor waits, or a caller awaits the result of an unfinished run.
func (e *Env) loop(ctx context.Context) {
	defer close(e.stopped)
	tick := time.NewTicker(recheck)
	defer tick.Stop()
	var s loopState
	for {
		select {
		case <-ctx.Done():
			if s.adv != nil {
				close(s.adv.done)
			}
			for _, w := range s.waits {
				w.finish(fmt.Errorf("the environment closed"))
			}
			return
		case r := <-e.advances:
			s.adv = r
		case w := <-e.waits:
			s.waits = append(s.waits, w)
		case <-e.clk.Changed():
		case <-tick.C:
		}
		e.step(ctx, &s)
	}
}

// checkWaits lets go the waiters whose run got there (or never will) and
// reports whether any was.
func (e *Env) checkWaits(ctx context.Context, s *loopState) bool {
	n := len(s.waits)
	s.waits = slices.DeleteFunc(s.waits, func(w *wait) bool { return w.check(ctx, e) })
	return len(s.waits) != n
}

// step moves the clock once if the App is quiet and someone wants it to.
func (e *Env) step(ctx context.Context, s *loopState) {
	e.checkWaits(ctx, s) // busy or not
	if s.adv == nil && len(s.waits) == 0 && !e.anyAwaited() {
		return // nobody wants time to move
	}
	idle, next, st := e.quiet(ctx)
	if !idle {
		return
	}
	// Quiet: what runs cannot change until time moves. Only now are the
	// conditions and awaited runs judged for good (judged before, a run
	// that suspended in between would see its timeout fire).
	if e.checkWaits(ctx, s) {
		return
	}
	if s.adv == nil && len(s.waits) == 0 && !e.awaited(ctx) {
		return
	}
	if again := e.clk.State(); again.Gen != st.Gen || again.Holds > 0 {
		return // something started meanwhile
	}
	switch {
	case s.adv != nil && (next.IsZero() || next.After(s.adv.to)):
		if s.adv.to.After(st.Now) {
			e.moveTo(ctx, s.adv.to)
			return
		}
		close(s.adv.done) // there, and quiet
		s.adv = nil
	case next.IsZero():
		// Nothing running, nothing due: a waiter whose condition is unmet
		// now waits for ever. Told so on the second look at the same
		// state, so a change just made is not missed.
		if st.Gen == s.stuck {
			s.waits = slices.DeleteFunc(s.waits, func(w *wait) bool { return w.stuck(ctx, e) })
		}
		s.stuck = st.Gen
	default:
		e.moveTo(ctx, next)
	}
}

// awaited reports whether a caller waits for an outcome not there yet:
// the result of a run that has not finished (Handle.Result, Workflow.Run)
// or the reply to a request (Entity.Request). Time may move for it.
func (e *Env) awaited(ctx context.Context) bool {
	for _, id := range e.inst.Engine.Awaited() {
		if r, err := e.store.GetReply(ctx, id); err == nil && r == nil {
			return true
		}
	}
	wf := e.inst.Workflows
	for _, id := range wf.Awaited() {
		if x, err := wf.Get(ctx, id); err == nil && !x.Status.Terminal() {
			return true
		}
	}
	return false
}

// anyAwaited reports, without reading the store, whether anyone waits for
// a run's result or a request's reply.
func (e *Env) anyAwaited() bool {
	if len(e.inst.Engine.Awaited()) > 0 {
		return true
	}
	return len(e.inst.Workflows.Awaited()) > 0
}

// claimSlack is how long past a move the claims of messages in flight
// must stay valid: the longest claim the engine takes.
const claimSlack = time.Minute

// moveTo sets the clock to t and has the read loop look at once for what
// fell due. The claims of messages in flight (a step sleeping out its
// backoff) are extended across the move first, as the runner's heartbeats
// would have extended them while that time passed.
func (e *Env) moveTo(ctx context.Context, t time.Time) {
	if err := e.store.ExtendClaims(ctx, e.inst.Engine.Address(), t.Sub(e.clk.Now())+claimSlack); err != nil {
		return // the store is closing
	}
	e.clk.AdvanceTo(t)
	e.inst.Engine.Deliverer().Wake()
}

// quiet reports whether nothing can run until time moves: nothing holds
// the clock (no handler, step, start, signal or schedule firing in flight;
// one sleeping out its backoff on the clock does not hold it), no message
// of a type the App hosts is deliverable now, and nothing took a hold
// while the store was read. next is then the earliest time anything falls
// due: a message's delivery time or a sleeper on the clock; zero if none;
// st is the clock's state the judgement holds for.
func (e *Env) quiet(ctx context.Context) (idle bool, next time.Time, st clock.State) {
	st = e.clk.State()
	if st.Holds > 0 {
		return false, time.Time{}, st
	}
	d := e.inst.Engine.Deliverer()
	types := d.Types()
	ds, err := e.store.DrainStats(ctx)
	if err != nil {
		return false, time.Time{}, st
	}
	for _, tb := range ds.Types {
		if tb.Pending > 0 && slices.Contains(types, tb.EntityType) {
			d.Wake() // due now and not claimed: let the read loop see it
			return false, time.Time{}, st
		}
	}
	next = st.Next
	if len(types) > 0 {
		w, ok, err := e.store.NextDelivery(ctx, e.inst.Engine.Address(), types)
		if err != nil {
			return false, time.Time{}, st
		}
		if at := st.Now.Add(w); ok && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	if again := e.clk.State(); again.Gen != st.Gen || again.Holds > 0 {
		return false, time.Time{}, st
	}
	return true, next, st
}

// Advance moves the virtual clock d ahead, running everything that falls
// due on the way in order of its time: each timer, delivery and cron tick
// fires at its own instant, and the App is quiet before the clock moves
// past it. It returns once the clock reads Now()+d and the App is quiet.
// Runs awaited meanwhile (Result in another goroutine) may take the clock
// further.
func (e *Env) Advance(d time.Duration) {
	e.t.Helper()
	r := &advanceReq{to: e.clk.Now().Add(d), done: make(chan struct{})}
	select {
	case e.advances <- r:
	case <-e.stopped:
		e.t.Fatalf("voltrotest: Advance(%s): the environment is closed", d)
	}
	t := time.NewTimer(settle)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		e.t.Fatalf("voltrotest: Advance(%s): the app did not go quiet within %s of wall time (a handler or step that does not return?)", d, settle)
	}
}
