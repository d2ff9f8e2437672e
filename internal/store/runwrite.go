package store

// Run writes: the fenced writes a runner makes while it executes a workflow
// run, grouped so that many runs share one transaction (group commit) and a
// finishing run's last journal entry, final state and the completion of the
// message that ran it cost a single commit.

import (
	"context"

	"github.com/voltro/voltro/internal/errs"
)

// RunWrite is one fenced write for a run: a journal entry, a state change,
// or both, optionally completing the claimed message that ran the replay.
// Every part is fenced by Shard and Fence (the shard's lock row must name
// Fence.Owner at Fence.Epoch).
type RunWrite struct {
	Shard string
	Fence Fence
	// Entry is appended first. An entry already at (id, seq) is kept, the
	// write's outcome is errs.ErrAlreadyExists and nothing else of this
	// write happens.
	Entry *JournalEntry
	// Update sets the run's state (its Shard and Fence are the write's). A
	// terminal run is never changed again (errs.ErrAlreadyExists).
	Update *ExecutionUpdate
	// Message, with Update, is the id of the message that ran this replay,
	// claimed at Fence: it is marked processed (with an empty reply) in the
	// same transaction. Zero for none.
	Message int64
}

// ExecutionID is the run the write is for.
func (w RunWrite) ExecutionID() string {
	if w.Update != nil {
		return w.Update.ID
	}
	return w.Entry.ExecutionID
}

// RunWriter applies run writes. Each write is fenced and judged on its own;
// all of them commit together.
type RunWriter interface {
	// WriteRuns returns one outcome per write, in order: nil, or an error
	// matching errs.ErrFenced, errs.ErrNotFound (no such run) or
	// errs.ErrAlreadyExists. A non-nil error means nothing was written.
	WriteRuns(ctx context.Context, ws []RunWrite) ([]error, error)
}

// AppendJournal records one finished operation through w: fenced
// (errs.ErrFenced), and an entry already at (id, seq) is kept
// (errs.ErrAlreadyExists).
func AppendJournal(ctx context.Context, w RunWriter, shard string, f Fence, e JournalEntry) error {
	return writeOne(ctx, w, RunWrite{Shard: shard, Fence: f, Entry: &e})
}

// UpdateExecution sets a run's state through w, fenced by u.Shard and
// u.Fence; a terminal run is never changed again (errs.ErrAlreadyExists).
func UpdateExecution(ctx context.Context, w RunWriter, u ExecutionUpdate) error {
	return writeOne(ctx, w, RunWrite{Shard: u.Shard, Fence: u.Fence, Update: &u})
}

func writeOne(ctx context.Context, w RunWriter, rw RunWrite) error {
	out, err := w.WriteRuns(ctx, []RunWrite{rw})
	if err != nil {
		return err
	}
	return out[0]
}

// CheckRunWrite rejects a write no driver could apply.
func CheckRunWrite(rw RunWrite) error {
	if rw.Entry == nil && rw.Update == nil {
		return errs.New(errs.CodeInvalidArgument, "a run write needs a journal entry or an update")
	}
	if rw.Message != 0 && rw.Update == nil {
		return errs.New(errs.CodeInvalidArgument, "message %d: a run write completes its message only with an update", rw.Message)
	}
	if rw.Update != nil {
		switch rw.Update.Status {
		case ExecRunning, ExecSuspended, ExecCompleted, ExecFailed, ExecCancelled:
		default:
			return errs.New(errs.CodeInvalidArgument, "update of %s: unknown status %q", rw.Update.ID, rw.Update.Status)
		}
	}
	return nil
}
