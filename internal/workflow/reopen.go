package workflow

// Resume and retry: a failed or cancelled run put back to work. Resume
// keeps the whole journal (the run goes on from where it stopped, with the
// code deployed now); retry cuts the journal at its first failed operation
// (that operation and everything after it run again).

import (
	"context"
	"fmt"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// reopenable are the statuses Resume and Retry accept.
var reopenable = []store.ExecStatus{store.ExecFailed, store.ExecCancelled}

// Resume makes a failed or cancelled run running again with its whole
// journal: the next replay answers every recorded operation from it and
// runs the first unrecorded one.
func (w *Engine) Resume(ctx context.Context, id string) error { return w.reopen(ctx, id, false) }

// Retry makes a failed or cancelled run running again from its last good
// operation: the journal is kept up to the first operation that failed
// (all of it if none did), which runs again.
func (w *Engine) Retry(ctx context.Context, id string) error { return w.reopen(ctx, id, true) }

func (w *Engine) reopen(ctx context.Context, id string, retry bool) error {
	verb := map[bool]string{false: "resume", true: "retry"}[retry]
	ro, ok := w.ws.(store.RunReopener)
	if !ok {
		return errs.New(errs.CodeUnavailable, "the %s store cannot %s runs", w.e.Store().Dialect(), verb)
	}
	x, err := w.ws.GetExecution(ctx, id)
	if err != nil {
		return err
	}
	if err := checkReopen(x.ID, x.Status, verb); err != nil {
		return err
	}
	truncate := -1
	if retry {
		journal, err := w.ws.Journal(ctx, id)
		if err != nil {
			return err
		}
		for _, e := range journal {
			if len(e.Error) > 0 {
				truncate = e.Seq
				break
			}
		}
	}
	wake := &store.Message{Shard: x.Shard, EntityType: EntityPrefix + x.Name, EntityID: x.ID, Tag: TagResume}
	found, reopened, err := ro.ReopenExecution(ctx, id, reopenable, truncate, wake)
	if err != nil {
		return err
	}
	if !reopened {
		return checkReopen(id, found, verb)
	}
	detail := "journal kept"
	if truncate >= 0 {
		detail = fmt.Sprintf("journal cut at operation %d", truncate)
	}
	w.intro.event(id, verb, detail)
	w.e.WakeShard(x.Shard)
	return nil
}

// checkReopen says why a run in status s cannot be resumed or retried.
func checkReopen(id string, s store.ExecStatus, verb string) error {
	switch s {
	case store.ExecFailed, store.ExecCancelled:
		return nil
	case store.ExecCompleted:
		return errs.New(errs.CodeInvalidArgument, "workflow %s completed: there is nothing to %s (only a failed or cancelled run can be)", id, verb)
	default:
		return errs.New(errs.CodeInvalidArgument, "workflow %s is %s, not finished: only a failed or cancelled run can be %s", id, s, map[string]string{"resume": "resumed", "retry": "retried"}[verb])
	}
}
