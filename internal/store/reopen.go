package store

// Reopening a finished run: resume (the journal kept) or retry (the journal
// cut at its first failed operation) of a failed or cancelled run.

import "context"

// Reopener is the Workflows group's way back for a finished run.
type Reopener interface {
	// ReopenExecution, in one transaction, when run id's status is one of
	// from: deletes its journal entries from seq truncate on (truncate < 0
	// keeps them all), makes it running again (no output, error, finish
	// time, cancel request or waiting-on), frees the dedupe keys of its
	// processed and dead messages (so its timers, signal wake-ups and
	// children's results can be sent again) and enqueues wake (never
	// claimed at insert). It returns the status it found; reopened=false,
	// with nothing written, when that status is not one of from.
	// errs.ErrNotFound for an unknown run.
	ReopenExecution(ctx context.Context, id string, from []ExecStatus, truncate int, wake *Message) (found ExecStatus, reopened bool, err error)
}
