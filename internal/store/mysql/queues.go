package mysql

// Queues (store.Queues): each queue's limits in _voltro_queues (migration
// 0800), and what QueueStats counts, read from the runs' rows through
// idx_wf_exec_queue and idx_wf_exec_dequeued. Dequeue is in dequeue.go.

import (
	"context"
	"database/sql"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// holdsSlot is the condition on a run of a queue that holds one of its
// slots: dequeued and not ended. (A run reopened after a cancel while it
// was queued runs again without having been dequeued: it holds none.)
const holdsSlot = "status IN ('running', 'suspended') AND dequeued_at IS NOT NULL"

// putQueue stores a queue's limits. updated_at, assigned first so that it
// compares the stored limits (left to right or all at once alike), moves
// only when they change: an upsert of the same limits changes no row and
// reports 0 rows affected (the pool's sessions do not ask for found rows).
const putQueue = `INSERT INTO _voltro_queues (name, concurrency, worker_concurrency, partition_concurrency,
		rate_limit, rate_period_ms, dequeues, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, 0, UTC_TIMESTAMP(6))
	ON DUPLICATE KEY UPDATE
		updated_at = IF(concurrency = VALUES(concurrency) AND worker_concurrency = VALUES(worker_concurrency)
			AND partition_concurrency = VALUES(partition_concurrency) AND rate_limit = VALUES(rate_limit)
			AND rate_period_ms = VALUES(rate_period_ms), updated_at, VALUES(updated_at)),
		concurrency = VALUES(concurrency), worker_concurrency = VALUES(worker_concurrency),
		partition_concurrency = VALUES(partition_concurrency), rate_limit = VALUES(rate_limit),
		rate_period_ms = VALUES(rate_period_ms)`

// queueCols is what scanQueue reads, in order.
const queueCols = "name, concurrency, worker_concurrency, partition_concurrency, rate_limit, rate_period_ms"

// scanQueue reads queueCols, plus any extra destinations after them.
func scanQueue(r scanner, extra ...any) (store.QueueLimits, error) {
	var q store.QueueLimits
	var periodMs int64
	err := r.Scan(append([]any{&q.Name, &q.Concurrency, &q.WorkerConcurrency, &q.PartitionConcurrency, &q.RateLimit, &periodMs}, extra...)...)
	q.RatePeriod = time.Duration(periodMs) * time.Millisecond
	return q, err
}

// periodMillis is d in whole milliseconds, rounded up: a rate period is
// never stored shorter than asked, nor a short positive one as none.
func periodMillis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if time.Duration(ms)*time.Millisecond < d {
		ms++
	}
	return ms
}

func (s *Store) PutQueue(ctx context.Context, q store.QueueLimits) (bool, error) {
	if q.Name == "" {
		return false, errs.New(errs.CodeInvalidArgument, "queue name is empty")
	}
	res, err := s.exec(ctx, putQueue, q.Name, q.Concurrency, q.WorkerConcurrency, q.PartitionConcurrency,
		q.RateLimit, periodMillis(q.RatePeriod))
	if err != nil {
		return false, wrapErr("put queue", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, wrapErr("put queue", err)
	}
	return n > 0, nil
}

func (s *Store) ListQueues(ctx context.Context) ([]store.QueueLimits, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+queueCols+" FROM _voltro_queues ORDER BY name")
	if err != nil {
		return nil, wrapErr("list queues", err)
	}
	defer rows.Close()
	var out []store.QueueLimits
	for rows.Next() {
		q, err := scanQueue(rows)
		if err != nil {
			return nil, wrapErr("list queues", err)
		}
		out = append(out, q)
	}
	return out, wrapErr("list queues", rows.Err())
}

// queueNow reads the clock and the queue's rate limit (zero when the queue
// has no limits stored): the aggregate answers one row either way.
const queueNow = "SELECT UTC_TIMESTAMP(6), COALESCE(MAX(rate_limit), 0), COALESCE(MAX(rate_period_ms), 0) FROM _voltro_queues WHERE name = ?"

// queueTotals counts a queue's waiting and slot-holding runs, and its
// dequeues since a time; args: now, now, queue, since, queue.
const queueTotals = `SELECT COALESCE(SUM(status = 'queued'), 0),
		COALESCE(SUM(status = 'queued' AND (start_at IS NULL OR start_at <= ?)), 0),
		MIN(IF(status = 'queued' AND (start_at IS NULL OR start_at <= ?), COALESCE(start_at, created_at), NULL)),
		COALESCE(SUM(status <> 'queued' AND dequeued_at IS NOT NULL), 0),
		(SELECT COUNT(*) FROM voltro_workflow_executions WHERE queue = ? AND dequeued_at > ?)
	FROM voltro_workflow_executions WHERE queue = ? AND status IN ('queued', 'running', 'suspended')`

// queuePartitions is the busiest partitions of a queue, in the order
// store.BusiestPartitions keeps (utf8mb4_bin sorts keys as Go does).
const queuePartitions = `SELECT partition_key, q, a FROM (
		SELECT partition_key, SUM(status = 'queued') AS q, SUM(status <> 'queued' AND dequeued_at IS NOT NULL) AS a
		FROM voltro_workflow_executions WHERE queue = ? AND status IN ('queued', 'running', 'suspended')
		GROUP BY partition_key) p
	WHERE q + a > 0 ORDER BY q + a DESC, partition_key LIMIT 5`

// statsTx reads a queue's numbers from one snapshot (REPEATABLE READ, the
// server's default): the totals and the partitions agree.
var statsTx = &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}

func (s *Store) QueueStats(ctx context.Context, queue string) (store.QueueStats, error) {
	var st store.QueueStats
	err := s.inTx(ctx, statsTx, func(tx *sql.Tx) error {
		st = store.QueueStats{Name: queue}
		var now time.Time
		var rate, periodMs int64
		if err := tx.QueryRowContext(ctx, queueNow, queue).Scan(&now, &rate, &periodMs); err != nil {
			return err
		}
		now = now.Truncate(time.Microsecond) // as in dequeueIn
		// the window of a queue without a rate limit
		period := time.Minute
		if rate > 0 && periodMs > 0 {
			period = time.Duration(periodMs) * time.Millisecond
		}
		var oldest sql.NullTime
		err := tx.QueryRowContext(ctx, queueTotals, now, now, queue, now.Add(-period), queue).
			Scan(&st.Queued, &st.Due, &oldest, &st.Active, &st.RecentDequeues)
		if err != nil {
			return err
		}
		if oldest.Valid {
			st.OldestDue = max(now.Sub(oldest.Time), 0)
		}
		parts := map[string]*store.PartitionCount{}
		err = scanRows(ctx, tx, queuePartitions, []any{queue}, func(rows *sql.Rows) error {
			var p store.PartitionCount
			if err := rows.Scan(&p.Key, &p.Queued, &p.Active); err != nil {
				return err
			}
			parts[p.Key] = &p
			return nil
		})
		st.Partitions = store.BusiestPartitions(parts)
		return err
	})
	if err != nil {
		return store.QueueStats{}, wrapErr("queue stats", err)
	}
	return st, nil
}
