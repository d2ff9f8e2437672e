package sqlite

// Queues: queued starts. The Queues group itself is not written yet (the
// conformance cases fail).

import (
	"context"
	"database/sql"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// unqueuedPlace are insertExecSQL's queue arguments of a run not on a queue.
var unqueuedPlace = []any{sql.Named("queue", ""), sql.Named("partition_key", ""), sql.Named("priority", 0), sql.Named("start_at", 0)}

// queuedStart is the status a start inserts x with and insertExecSQL's
// queue arguments: a run on a queue waits there, queued, for Dequeue.
func queuedStart(x store.Execution) (store.ExecStatus, []any) {
	if x.Queue == "" {
		return store.ExecRunning, unqueuedPlace
	}
	return store.ExecQueued, []any{sql.Named("queue", x.Queue), sql.Named("partition_key", x.Partition),
		sql.Named("priority", x.Priority), sql.Named("start_at", micros(x.StartAt))}
}

// startedAs is x as a start stored it with status (see queuedStart).
func startedAs(x store.Execution, status store.ExecStatus) store.Execution {
	x.Status, x.DequeuedAt = status, time.Time{}
	if status == store.ExecQueued {
		x.StartAt = fromMicros(micros(x.StartAt))
	} else {
		x.Partition, x.Priority, x.StartAt = "", 0, time.Time{}
	}
	return x
}

func (s *Store) PutQueue(context.Context, store.QueueLimits) (bool, error) {
	return false, errs.New(errs.CodeUnavailable, "queues: not written for this store yet")
}

func (s *Store) ListQueues(context.Context) ([]store.QueueLimits, error) {
	return nil, errs.New(errs.CodeUnavailable, "queues: not written for this store yet")
}

func (s *Store) Dequeue(context.Context, store.DequeueRequest) ([]store.Dequeued, error) {
	return nil, errs.New(errs.CodeUnavailable, "queues: not written for this store yet")
}

func (s *Store) QueueStats(context.Context, string) (store.QueueStats, error) {
	return store.QueueStats{}, errs.New(errs.CodeUnavailable, "queues: not written for this store yet")
}
