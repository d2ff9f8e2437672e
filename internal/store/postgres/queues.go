package postgres

// Queues: the limits live in _voltro_queues, the queued runs in the
// executions table (migration 0800). A Dequeue is one READ COMMITTED
// transaction whose first statement locks the queue's row FOR UPDATE:
// every later statement of it takes its snapshot once the lock is held, so
// it sees the slots the previous holder handed out, and two dequeues of a
// queue, from any instance, never count the same free slot.

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// sqlPutQueue upserts a queue's limits and returns a row only when it
// inserted them or changed them.
const sqlPutQueue = `INSERT INTO _voltro_queues AS q
		(name, concurrency, worker_concurrency, partition_concurrency, rate_limit, rate_period_ms)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (name) DO UPDATE SET concurrency = EXCLUDED.concurrency,
		worker_concurrency = EXCLUDED.worker_concurrency, partition_concurrency = EXCLUDED.partition_concurrency,
		rate_limit = EXCLUDED.rate_limit, rate_period_ms = EXCLUDED.rate_period_ms
	WHERE (q.concurrency, q.worker_concurrency, q.partition_concurrency, q.rate_limit, q.rate_period_ms)
		IS DISTINCT FROM (EXCLUDED.concurrency, EXCLUDED.worker_concurrency, EXCLUDED.partition_concurrency,
			EXCLUDED.rate_limit, EXCLUDED.rate_period_ms)
	RETURNING true`

// PutQueue stores RatePeriod in whole milliseconds.
func (s *Store) PutQueue(ctx context.Context, q store.QueueLimits) (bool, error) {
	if q.Name == "" {
		return false, errs.New(errs.CodeInvalidArgument, "queue name is empty")
	}
	var changed bool
	err := s.pool.QueryRow(ctx, sqlPutQueue, q.Name, q.Concurrency, q.WorkerConcurrency, q.PartitionConcurrency,
		q.RateLimit, q.RatePeriod.Milliseconds()).Scan(&changed)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, wrapErr("put queue", err)
	}
	return changed, nil
}

const queueCols = `name, concurrency, worker_concurrency, partition_concurrency, rate_limit, rate_period_ms`

func scanQueue(row pgx.CollectableRow) (store.QueueLimits, error) {
	var q store.QueueLimits
	var periodMS int64
	err := row.Scan(&q.Name, &q.Concurrency, &q.WorkerConcurrency, &q.PartitionConcurrency, &q.RateLimit, &periodMS)
	q.RatePeriod = time.Duration(periodMS) * time.Millisecond
	return q, err
}

func (s *Store) ListQueues(ctx context.Context) ([]store.QueueLimits, error) {
	// byte order, as the other stores sort names, whatever the collation
	rows, err := s.pool.Query(ctx, `SELECT `+queueCols+` FROM _voltro_queues ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, wrapErr("list queues", err)
	}
	out, err := pgx.CollectRows(rows, scanQueue)
	if err != nil {
		return nil, wrapErr("list queues", err)
	}
	return out, nil
}

// sqlQueueStats counts queue $1's runs waiting or holding a slot, per
// partition (from the queue index: the queue's finished runs are not
// read), next to its dequeues in the rate window (from the dequeued
// index): the queue's RatePeriod, or a minute without a rate limit. An
// empty queue gives one row of NULL partition counts.
const sqlQueueStats = `WITH per AS (
		SELECT e.partition_key AS p,
			count(*) FILTER (WHERE e.status = 'queued') AS queued,
			count(*) FILTER (WHERE e.status = 'queued' AND (e.start_at IS NULL OR e.start_at <= now())) AS due,
			count(*) FILTER (WHERE e.status <> 'queued') AS active,
			max(now() - coalesce(e.start_at, e.created_at))
				FILTER (WHERE e.status = 'queued' AND (e.start_at IS NULL OR e.start_at <= now())) AS oldest
		FROM voltro_workflow_executions e
		WHERE e.queue = $1 AND (e.status = 'queued' OR (e.status IN ('running', 'suspended') AND e.dequeued_at IS NOT NULL))
		GROUP BY e.partition_key
	), r AS (
		SELECT count(*) AS n FROM voltro_workflow_executions
		WHERE queue = $1 AND dequeued_at > now() - interval '1 millisecond' * coalesce(
			(SELECT rate_period_ms FROM _voltro_queues WHERE name = $1 AND rate_limit > 0 AND rate_period_ms > 0), 60000)
	)
	SELECT r.n, per.p, per.queued, per.due, per.active, (extract(epoch FROM per.oldest) * 1000000)::bigint
	FROM r LEFT JOIN per ON true`

func (s *Store) QueueStats(ctx context.Context, queue string) (store.QueueStats, error) {
	st := store.QueueStats{Name: queue}
	rows, err := s.pool.Query(ctx, sqlQueueStats, queue)
	if err != nil {
		return st, wrapErr("queue stats", err)
	}
	defer rows.Close()
	parts := map[string]*store.PartitionCount{}
	for rows.Next() {
		var (
			p                   *string
			queued, due, active *int
			oldestMicros        *int64
			recent              int
		)
		if err := rows.Scan(&recent, &p, &queued, &due, &active, &oldestMicros); err != nil {
			return st, wrapErr("queue stats", err)
		}
		st.RecentDequeues = recent
		if p == nil {
			continue // no run waits or holds a slot
		}
		st.Queued += *queued
		st.Due += *due
		st.Active += *active
		if oldestMicros != nil {
			st.OldestDue = max(st.OldestDue, time.Duration(*oldestMicros)*time.Microsecond)
		}
		parts[*p] = &store.PartitionCount{Key: *p, Queued: *queued, Active: *active}
	}
	if err := rows.Err(); err != nil {
		return st, wrapErr("queue stats", err)
	}
	st.Partitions = store.BusiestPartitions(parts)
	return st, nil
}
