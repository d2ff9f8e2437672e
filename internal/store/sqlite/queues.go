package sqlite

// Queues (store.Queues): the limits table, queued starts and QueueStats.
// Dequeue is in dequeue.go. A queue's runs are rows of the executions
// table with queue <> ''; every query of them says so literally, which is
// what lets SQLite use the partial queue indexes (a bound parameter alone
// could be '').

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

// putQueueSQL upserts a queue's limits; a row whose limits are the same is
// left alone, so the change count says whether they changed.
const putQueueSQL = `INSERT INTO "_voltro_queues"
		(name, concurrency, worker_concurrency, partition_concurrency, rate_limit, rate_period_ms, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (name) DO UPDATE SET
		concurrency = excluded.concurrency, worker_concurrency = excluded.worker_concurrency,
		partition_concurrency = excluded.partition_concurrency, rate_limit = excluded.rate_limit,
		rate_period_ms = excluded.rate_period_ms, updated_at = excluded.updated_at
	WHERE (concurrency, worker_concurrency, partition_concurrency, rate_limit, rate_period_ms) IS NOT
		(excluded.concurrency, excluded.worker_concurrency, excluded.partition_concurrency, excluded.rate_limit, excluded.rate_period_ms)`

const queueCols = `name, concurrency, worker_concurrency, partition_concurrency, rate_limit, rate_period_ms`

const getQueueSQL = `SELECT ` + queueCols + ` FROM "_voltro_queues" WHERE name = ?`

func scanQueue(sc rowScanner) (store.QueueLimits, error) {
	var q store.QueueLimits
	var periodMS int64
	err := sc.Scan(&q.Name, &q.Concurrency, &q.WorkerConcurrency, &q.PartitionConcurrency, &q.RateLimit, &periodMS)
	q.RatePeriod = time.Duration(periodMS) * time.Millisecond
	return q, err
}

// PutQueue stores q; RatePeriod is kept to the millisecond.
func (s *Store) PutQueue(ctx context.Context, q store.QueueLimits) (bool, error) {
	if q.Name == "" {
		return false, errs.New(errs.CodeInvalidArgument, "queue name is empty")
	}
	r, err := s.execW(ctx, putQueueSQL, q.Name, q.Concurrency, q.WorkerConcurrency, q.PartitionConcurrency,
		q.RateLimit, q.RatePeriod.Milliseconds(), s.now())
	if err != nil {
		return false, s.wrap(err, "put queue "+q.Name)
	}
	n, err := r.RowsAffected()
	return n > 0, s.wrap(err, "put queue "+q.Name)
}

func (s *Store) ListQueues(ctx context.Context) ([]store.QueueLimits, error) {
	rows, err := s.queryR(ctx, `SELECT `+queueCols+` FROM "_voltro_queues" ORDER BY name`)
	if err != nil {
		return nil, s.wrap(err, "list queues")
	}
	defer rows.Close()
	out := []store.QueueLimits{}
	for rows.Next() {
		q, err := scanQueue(rows)
		if err != nil {
			return nil, s.wrap(err, "list queues")
		}
		out = append(out, q)
	}
	return out, s.wrap(rows.Err(), "list queues")
}

// queueStatsSQL counts a queue's waiting and slot-holding runs per
// partition, and (the row with kind 1) its runs dequeued after @since: one
// statement, so one snapshot. A run past holding its slot is not read.
const queueStatsSQL = `SELECT 0, partition_key,
		SUM(status = 'queued'),
		SUM(status = 'queued' AND start_at <= @now),
		SUM(status IN ('running', 'suspended') AND dequeued_at <> 0),
		MIN(CASE WHEN status = 'queued' AND start_at <= @now THEN CASE WHEN start_at <> 0 THEN start_at ELSE created_at END END)
	FROM voltro_workflow_executions
	WHERE queue = @queue AND queue <> '' AND status IN ('queued', 'running', 'suspended')
	GROUP BY partition_key
	UNION ALL
	SELECT 1, '', COUNT(*), 0, 0, NULL FROM voltro_workflow_executions
	WHERE queue = @queue AND queue <> '' AND dequeued_at > @since`

func (s *Store) QueueStats(ctx context.Context, queue string) (store.QueueStats, error) {
	st := store.QueueStats{Name: queue}
	l, err := scanQueue(s.queryRowR(ctx, getQueueSQL, queue))
	if err != nil && err != sql.ErrNoRows {
		return st, s.wrap(err, "queue stats of "+queue)
	}
	period := time.Minute
	if l.RateLimit > 0 && l.RatePeriod > 0 {
		period = l.RatePeriod
	}
	t := s.now()
	rows, err := s.queryR(ctx, queueStatsSQL, sql.Named("queue", queue), sql.Named("now", t),
		sql.Named("since", t-durMicros(period)))
	if err != nil {
		return st, s.wrap(err, "queue stats of "+queue)
	}
	defer rows.Close()
	parts := map[string]*store.PartitionCount{}
	for rows.Next() {
		var kind int
		var key string
		var queued, due, active int
		var oldest sql.NullInt64
		if err := rows.Scan(&kind, &key, &queued, &due, &active, &oldest); err != nil {
			return st, s.wrap(err, "queue stats of "+queue)
		}
		if kind == 1 {
			st.RecentDequeues = queued
			continue
		}
		st.Queued, st.Due, st.Active = st.Queued+queued, st.Due+due, st.Active+active
		if oldest.Valid {
			st.OldestDue = max(st.OldestDue, ageOf(t, oldest.Int64))
		}
		if queued+active > 0 {
			parts[key] = &store.PartitionCount{Key: key, Queued: queued, Active: active}
		}
	}
	if err := rows.Err(); err != nil {
		return st, s.wrap(err, "queue stats of "+queue)
	}
	st.Partitions = store.BusiestPartitions(parts)
	return st, nil
}
