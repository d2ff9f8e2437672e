package workflow

// Replaying recorded history against the code registered now: the check a
// deploy needs before it ships a changed workflow. The code runs against a
// run's journal as a resumed run would, but nothing is written and no
// operation past the journal runs: a recorded step returns its recorded
// result, and the first operation the journal does not hold ends the
// replay where the run would have gone on.

import (
	"context"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// replayEnd unwinds a replay that reached the end of its recorded journal.
type replayEnd struct{}

// Replay runs workflow name's code on input against journal and, for a
// suspended run, its waitingOn (the row's WaitingOn; "" for none). It
// returns an error matching errs.ErrNonDeterminism when the code no longer
// agrees with them (another operation, name or order at a recorded
// sequence number, another wait where the run waits, or an end before the
// journal's or the wait), one matching errs.ErrHandlerPanic
// when the code panicked, errs.ErrUnregistered when name is not registered
// here, and nil otherwise (a workflow that returns an error agrees with its
// journal as well as one that returns a result).
func (w *Engine) Replay(ctx context.Context, id, name string, input []byte, journal []store.JournalEntry, waitingOn string) error {
	w.mu.Lock()
	d := w.defs[name]
	w.mu.Unlock()
	if d == nil {
		return errs.New(errs.CodeUnregistered, "workflow %q is not registered: cannot replay run %s", name, id)
	}
	c := &Context{
		ctx: ctx, w: w, exec: store.Execution{ID: id, Name: name, Input: input},
		journal: make(map[int]store.JournalEntry, len(journal)), replayOnly: true, start: &StartInfo{},
		log: w.log.With("workflow", name, "execution", id, "replay", true),
	}
	for _, e := range journal {
		c.journal[e.Seq] = e
	}
	c.resumeAt(waitingOn)
	if _, oc := w.execute(c, d); oc.diverged || oc.panicked {
		return oc.err
	}
	return nil
}
