package workflow

// One run of a workflow's code: the entity handler of type workflow/<name>.
// Every message (start, timer, signal, child finished, cancel) replays the
// code from the top against the journal until it finishes or must wait.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/voltro/voltro/internal/delivery"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// Message tags sent to a workflow entity.
const (
	TagStart  = "start"
	TagTimer  = "timer"
	TagSignal = "signal"
	TagChild  = "child"
	TagCancel = "cancel"
	TagResume = "resume" // a failed or cancelled run resumed or retried
)

// handle runs one message for execution m.EntityID.
func (w *Engine) handle(d *definition) func(ctx context.Context, m store.Message) ([]byte, error) {
	return func(ctx context.Context, m store.Message) ([]byte, error) {
		w.local.Store(m.EntityID, struct{}{})
		defer func() {
			w.local.Delete(m.EntityID)
			w.nudge(m.EntityID) // unless it finished (handed over already), Result reads
		}()
		var x store.Execution
		var err error
		if cached, ok := w.fresh.LoadAndDelete(m.EntityID); ok && m.Tag == TagStart && m.Attempts <= 1 {
			x = cached.(store.Execution)
		} else if x, err = w.ws.GetExecution(ctx, m.EntityID); errors.Is(err, errs.ErrNotFound) {
			// Retention deleted the run, finished: a message that outlived
			// it (a timer, a late wake-up) is done with, as it would be for
			// the finished run.
			w.log.Debug("workflow: message for a run that is gone", "execution", m.EntityID, "tag", m.Tag, "message", m.ID)
			return nil, nil
		} else if err != nil {
			return nil, err
		}
		if x.Status.Terminal() {
			return nil, nil
		}
		fence := store.Fence{Owner: w.e.Address(), Epoch: m.ClaimEpoch}
		if x.Status == store.ExecQueued {
			return nil, w.whileQueued(ctx, x, m, fence)
		}
		if x.Queue != "" && m.Tag == TagStart && m.Attempts <= 1 && !x.DequeuedAt.IsZero() {
			w.tel.QueueWaited(x.Queue, x.DequeuedAt.Sub(later(x.CreatedAt, x.StartAt)))
		}
		if m.Tag == TagTimer {
			var tp timerPayload
			if err := json.Unmarshal(m.Payload, &tp); err != nil {
				return nil, errs.Wrap(errs.CodeDecode, err, "timer payload")
			}
			entry := store.JournalEntry{ExecutionID: x.ID, Seq: tp.Seq, Kind: tp.Kind, Name: tp.Name, Attempts: 1, Runner: fence.Owner, StartedAt: w.clk.Now()}
			if tp.Kind == store.JournalSignal {
				entry.Error = errs.Encode(errs.New(errs.CodeDeadline, "workflow %s: signal %q did not arrive in time", x.ID, tp.Name))
			}
			if err := w.wr.write(store.RunWrite{Shard: x.Shard, Fence: fence, Entry: &entry}); err != nil && !errors.Is(err, errs.ErrAlreadyExists) {
				return nil, err
			}
		}
		// A first delivery of a start message has an empty journal: save
		// the read. Anything else (a redelivery after a crash included)
		// replays what is recorded.
		var journal []store.JournalEntry
		if m.Tag != TagStart || m.Attempts > 1 || x.Status != store.ExecRunning {
			if journal, err = w.ws.Journal(ctx, x.ID); err != nil {
				return nil, err
			}
		}
		ctx, endSpan := w.tel.StartReplay(ctx, w.ws, x, m, len(journal))
		c := &Context{
			ctx: ctx, w: w, exec: x, fence: fence, journal: make(map[int]store.JournalEntry, len(journal)),
			cancel: x.CancelRequested, log: w.log.With("workflow", x.Name, "execution", x.ID), msgID: m.ID, delivery: m.Attempts,
			maxParallel: d.opts.MaxParallel,
		}
		for _, e := range journal {
			c.journal[e.Seq] = e
		}
		c.resumeAt(x.WaitingOn)
		if x.Status == store.ExecSuspended || len(journal) > 0 {
			w.introEvent(x.ID, "resumed", fmt.Sprintf("%s on %s, %d journaled operation(s)", m.Tag, fence.Owner, len(journal)))
			c.log.Debug("workflow resumed", "tag", m.Tag, "runner", fence.Owner, "journaled", len(journal))
		} else {
			w.introEvent(x.ID, "started", "on "+fence.Owner)
			c.log.Debug("workflow started", "runner", fence.Owner)
		}
		out, outcome := w.execute(c, d)
		c.settle(outcome.kind == "suspended")
		err = w.finish(ctx, c, out, outcome)
		endSpan(outcome.kind, cmp.Or(err, outcome.err))
		return nil, err
	}
}

// outcome of one replay
type outcome struct {
	kind    string // done, failed, suspended, cancelled, lost
	err     error
	waiting string
	// diverged or panicked: the code itself failed the replay (not a
	// workflow that returned an error)
	diverged, panicked bool
}

func (w *Engine) execute(c *Context, d *definition) (out []byte, oc outcome) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if c.unwound != nil {
			r = c.unwound // ours, whatever the code re-panicked with after catching it
		}
		switch v := r.(type) {
		case suspend:
			oc = outcome{kind: "suspended", waiting: v.on}
		case cancelled:
			oc = outcome{kind: "cancelled", err: errs.New(errs.CodeCancelled, "workflow %s was cancelled", c.exec.ID)}
		case divergence:
			oc = outcome{kind: "failed", err: v.err(c.exec.ID), diverged: true}
		case lost:
			oc = outcome{kind: "lost"}
		case replayEnd:
			oc = outcome{kind: "suspended", waiting: "the end of the recorded journal"}
		case storeFailure:
			oc = outcome{kind: "lost", err: v.err}
		default:
			// the stack goes to the log only: the error is stored in the
			// run and returned to whoever awaits it
			c.log.Error("workflow panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			oc = outcome{kind: "failed", err: errs.New(errs.CodeHandlerPanic, "workflow %s panicked: %v", c.exec.ID, r), panicked: true}
		}
	}()
	out, err := d.fn(c, c.exec.Input)
	if c.unwound != nil {
		// The code recovered an unwind and returned: the run is where the
		// unwind left it (suspended, cancelled, …), not what it returned.
		c.log.Warn("workflow code recovered voltro's unwind of the run and returned; ignoring what it returned (re-panic values you did not raise)", "unwind", fmt.Sprint(c.unwound), "returned", err)
		panic(c.unwound)
	}
	if err != nil {
		if errors.Is(err, errs.ErrCancelled) && c.cancel {
			return nil, outcome{kind: "cancelled", err: err}
		}
		return nil, outcome{kind: "failed", err: err}
	}
	// Journal entries past what this run reached mean the code changed, as
	// does a wait it had got to.
	for seq, e := range c.journal {
		if seq >= c.seq {
			return nil, outcome{kind: "failed", err: divergence{seq: seq, want: fmt.Sprintf("%s %q", e.Kind, e.Name), got: "the end of the workflow"}.err(c.exec.ID), diverged: true}
		}
	}
	if w := c.waited; w != nil && w.Seq >= c.seq && !c.cancel {
		return nil, outcome{kind: "failed", err: divergence{seq: w.Seq, want: w.String(), got: "the end of the workflow", waited: true}.err(c.exec.ID), diverged: true}
	}
	return out, outcome{kind: "done"}
}

// finish writes the outcome of a replay: the last step's entry, the run's
// new state and the completion of the message that ran it, in one write.
func (w *Engine) finish(ctx context.Context, c *Context, out []byte, oc outcome) error {
	x := c.exec
	u := store.ExecutionUpdate{ID: x.ID, Shard: x.Shard, Fence: c.fence, Runner: c.fence.Owner}
	switch oc.kind {
	case "lost":
		if oc.err != nil {
			return oc.err // the message is retried where the shard lives now
		}
		return ctx.Err()
	case "suspended":
		if x.Status == store.ExecSuspended && x.WaitingOn == oc.waiting {
			return nil
		}
		u.Status, u.WaitingOn = store.ExecSuspended, oc.waiting
		w.introEvent(x.ID, "suspended", oc.waiting)
		w.introRun(x, store.ExecSuspended, "")
		return w.update(ctx, c, u)
	case "done":
		u.Status, u.Output = store.ExecCompleted, out
	case "cancelled":
		u.Status, u.Error = store.ExecCancelled, errs.Encode(oc.err)
	case "failed":
		u.Status, u.Error = store.ExecFailed, errs.Encode(oc.err)
		c.log.Warn("workflow failed", "err", oc.err)
	}
	// Taken before the write: only waits begun before it get this end
	// without reading the row (see handedEnd).
	stamp := w.ends.Add(1)
	if err := w.update(ctx, c, u); err != nil {
		return err
	}
	w.tel.WorkflowFinished(x.Name, string(u.Status), w.clk.Now().Sub(x.CreatedAt))
	errText := ""
	if oc.err != nil {
		errText = oc.err.Error()
	}
	w.introEvent(x.ID, string(u.Status), errText)
	w.introRun(x, u.Status, errText)
	if c.hasChildren() {
		w.closeChildren(ctx, x)
	}
	w.notifyParent(ctx, x)
	done := x
	done.Status, done.Output, done.Error, done.WaitingOn, done.Runner = u.Status, u.Output, u.Error, "", u.Runner
	now := w.clk.Now()
	done.UpdatedAt, done.FinishedAt = now, now
	w.local.Delete(x.ID) // before the hand-over: a waiter that misses it reads the row
	w.notifyLocal(done, stamp)
	if x.Queue != "" {
		w.queues.pokeQueue(x.Queue) // its slot is free
	}
	return nil
}

// whileQueued handles a message to a run still waiting on its queue (a
// signal's or a cancel's wake-up): the code does not run before the run
// has its slot. A cancelled run ends here, cancelled, without ever
// running; anything else is kept for when it runs (its signals are
// stored).
func (w *Engine) whileQueued(ctx context.Context, x store.Execution, m store.Message, fence store.Fence) error {
	if !x.CancelRequested {
		return nil
	}
	c := &Context{ctx: ctx, w: w, exec: x, fence: fence, msgID: m.ID, cancel: true,
		journal: map[int]store.JournalEntry{}, log: w.log.With("workflow", x.Name, "execution", x.ID)}
	return w.finish(ctx, c, nil, outcome{kind: "cancelled", err: errs.New(errs.CodeCancelled, "workflow %s was cancelled while queued", x.ID)})
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// update writes u with the replay's pending step entry and completes the
// message that ran the replay in the same transaction.
func (w *Engine) update(ctx context.Context, c *Context, u store.ExecutionUpdate) error {
	rw := store.RunWrite{Shard: u.Shard, Fence: u.Fence, Entry: c.pending, Update: &u, Message: c.msgID}
	c.pending = nil
	err := w.wr.write(rw)
	switch {
	case err == nil:
		if rw.Message != 0 {
			delivery.MarkCompleted(ctx)
		}
		return nil
	case errors.Is(err, errs.ErrAlreadyExists):
		// The run finished already (a duplicate delivery), or the entry
		// was written by someone else: only the first is done with.
		x, gerr := w.ws.GetExecution(context.WithoutCancel(ctx), u.ID)
		if gerr == nil && x.Status.Terminal() {
			return nil
		}
		return err
	}
	return err
}

// closeChildren applies each unfinished child's parent-close policy.
func (w *Engine) closeChildren(ctx context.Context, x store.Execution) {
	children, err := w.ws.ListExecutions(ctx, store.ExecutionFilter{ParentID: x.ID})
	if err != nil {
		w.log.Warn("workflow: listing children failed", "execution", x.ID, "err", err)
		return
	}
	for _, ch := range children {
		if ch.Status.Terminal() || ch.ParentClose == ParentCloseAbandon {
			continue
		}
		if err := w.Cancel(ctx, ch.ID); err != nil {
			w.log.Warn("workflow: cancelling child failed", "child", ch.ID, "err", err)
		}
	}
}

// notifyParent wakes the parent of a finished child.
func (w *Engine) notifyParent(ctx context.Context, x store.Execution) {
	if x.ParentID == "" {
		return
	}
	p, err := w.ws.GetExecution(ctx, x.ParentID)
	if err != nil || p.Status.Terminal() {
		return
	}
	if err := w.wake(ctx, p, TagChild, nil, "child:"+x.ID); err != nil {
		w.log.Warn("workflow: waking the parent failed", "parent", p.ID, "err", err)
	}
}
