package workflow

// Resume and retry: a failed or cancelled run put back to work. Resume
// keeps the whole journal (the run goes on from where it stopped, with the
// code deployed now); retry cuts the journal at its first failed operation
// (that operation and everything after it run again).

import (
	"context"
	"errors"
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
	x, err := w.ws.GetExecution(ctx, id)
	if err != nil {
		return err
	}
	if err := checkReopen(x.ID, x.Status, verb); err != nil {
		return err
	}
	truncate := -1
	if retry || x.Status == store.ExecCancelled {
		journal, err := w.ws.Journal(ctx, id)
		if err != nil {
			return err
		}
		if x.Status == store.ExecCancelled {
			if err := w.reopenClosedChildren(ctx, x, journal); err != nil {
				return err
			}
		}
		if retry {
			truncate = firstFailed(journal)
		}
	}
	wake := &store.Message{Shard: x.Shard, EntityType: EntityPrefix + x.Name, EntityID: x.ID, Tag: TagResume}
	found, reopened, err := w.ws.ReopenExecution(ctx, id, reopenable, truncate, wake)
	if err != nil {
		return err
	}
	if !reopened {
		return checkReopen(id, found, verb)
	}
	// A push of the end it had, from the runner it was routed to, is no
	// longer its end: Result here reads the row instead.
	w.routed.take(id)
	detail := "journal kept"
	if truncate >= 0 {
		detail = fmt.Sprintf("journal cut at operation %d", truncate)
	}
	w.intro.event(id, verb, detail)
	w.e.WakeShard(x.Shard)
	return nil
}

// firstFailed is the seq of the journal's first failed operation, -1 if
// none failed.
func firstFailed(journal []store.JournalEntry) int {
	for _, e := range journal {
		if len(e.Error) > 0 {
			return e.Seq
		}
	}
	return -1
}

// reopenClosedChildren resumes the children that the cancel of parent x
// ended by their parent-close policy, before x itself runs again: x's
// replay then finds them running and waits for them as it did. A child
// counts as ended by x's cancel when it is cancelled, its policy is not
// abandon, and x's journal has not recorded its outcome (x still waited on
// it, or never awaited it). A child a user cancelled on its own before x
// saw it is not told apart from one by the rows, and is resumed too; one
// whose cancel x recorded stays cancelled (x's replay answers it from the
// journal anyway).
func (w *Engine) reopenClosedChildren(ctx context.Context, x store.Execution, journal []store.JournalEntry) error {
	recorded := make(map[string]bool, len(journal))
	for _, e := range journal {
		if e.Kind == store.JournalChild {
			recorded[fmt.Sprintf("%s/%d", x.ID, e.Seq)] = true
		}
	}
	children, err := w.ws.ListExecutions(ctx, store.ExecutionFilter{ParentID: x.ID})
	if err != nil {
		return err
	}
	for _, ch := range children {
		if ch.Status != store.ExecCancelled || ch.ParentClose == ParentCloseAbandon || recorded[ch.ID] {
			continue
		}
		if err := w.reopen(ctx, ch.ID, false); err != nil && !errors.Is(err, errs.ErrInvalidArgument) {
			return fmt.Errorf("resume child %s: %w", ch.ID, err)
		}
	}
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
