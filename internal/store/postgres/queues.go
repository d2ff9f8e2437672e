package postgres

// Queues: not yet written for this store (the conformance cases fail).

import (
	"context"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

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
