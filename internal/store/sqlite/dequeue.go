package sqlite

// Dequeue (store.Queues) is one BEGIN IMMEDIATE transaction on the write
// connection. That transaction is the queue's lock: SQLite has one writer
// per file, so the limits read, the slots counted and the runs moved to
// running cannot interleave with another Dequeue, of this process (the
// single write connection) or of any other (the file's write lock), and
// nothing is handed out twice. A read on the read pool first skips the write
// lock altogether when no run of the queue is due, the common case for a
// queue polled on a timer.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/voltro/voltro/internal/store"
)

// dequeueDueSQL: the queue has stored limits and a run due now.
const dequeueDueSQL = `SELECT EXISTS (SELECT 1 FROM "_voltro_queues" WHERE name = @queue)
	AND EXISTS (SELECT 1 FROM voltro_workflow_executions
		WHERE queue = @queue AND queue <> '' AND status = 'queued' AND start_at <= @now)`

// dequeueSlotsSQL counts the slots held and, when @rated, the dequeues in
// the rate window (after @since).
const dequeueSlotsSQL = `SELECT
	(SELECT COUNT(*) FROM voltro_workflow_executions
		WHERE queue = @queue AND queue <> '' AND status IN ('running', 'suspended') AND dequeued_at <> 0),
	CASE WHEN @rated THEN (SELECT COUNT(*) FROM voltro_workflow_executions
		WHERE queue = @queue AND queue <> '' AND dequeued_at > @since) ELSE 0 END`

// holderOf is the runner a run's shard lock row names (empty: none), read only
// when the queue has a worker limit (@wc > 0).
const holderOf = `CASE WHEN @wc > 0 THEN COALESCE((SELECT l.owner FROM voltro_shard_locks AS l WHERE l.shard = e.shard), '') ELSE '' END`

// dequeueHeadsSQL picks the runs to dequeue, in the documented order:
// priority, then partitions in turn (prank: a run's place in its partition
// by priority and creation), then creation. Each row carries the slots its
// partition (pheld) and shard holder (hheld) held before this dequeue.
//
// A run of a partition already at @pc, or of a holder already at @wc, can
// never be taken, and is filtered out here. With one of the two limits set,
// the rank filters make the rest exact too (a partition with pheld slots
// takes its first @pc - pheld runs; a holder its first @wc - hheld), so the
// first @limit rows are the answer. With both set, whether a run is passed
// over depends on which runs before it were, so Dequeue decides in Go over
// the rows that survive the first filter, fetched up to a bound.
const dequeueHeadsSQL = `WITH
held AS (
	SELECT e.partition_key AS part, ` + holderOf + ` AS holder
	FROM voltro_workflow_executions AS e
	WHERE e.queue = @queue AND e.queue <> '' AND e.status IN ('running', 'suspended') AND e.dequeued_at <> 0
),
by_part AS (SELECT part, COUNT(*) AS n FROM held GROUP BY part),
by_holder AS (SELECT holder, COUNT(*) AS n FROM held GROUP BY holder),
due AS (
	SELECT e.rowid AS rid, e.id, e.partition_key AS part, e.priority, e.created_at, ` + holderOf + ` AS holder,
		ROW_NUMBER() OVER (PARTITION BY e.partition_key ORDER BY e.priority, e.created_at, e.id) AS prank
	FROM voltro_workflow_executions AS e
	WHERE e.queue = @queue AND e.queue <> '' AND e.status = 'queued' AND e.start_at <= @now
),
avail AS (
	SELECT d.*, COALESCE(p.n, 0) AS pheld, COALESCE(h.n, 0) AS hheld
	FROM due AS d LEFT JOIN by_part AS p ON p.part = d.part LEFT JOIN by_holder AS h ON h.holder = d.holder
	WHERE (@pc = 0 OR (COALESCE(p.n, 0) < @pc AND (@wc > 0 OR d.prank + COALESCE(p.n, 0) <= @pc)))
		AND (@wc = 0 OR COALESCE(h.n, 0) < @wc)
),
ranked AS (
	SELECT a.*, ROW_NUMBER() OVER (PARTITION BY a.holder ORDER BY a.priority, a.prank, a.created_at, a.id) AS hrank
	FROM avail AS a
)
SELECT r.id, x.name, x.shard, r.part, r.holder, r.pheld, r.hheld
FROM ranked AS r JOIN voltro_workflow_executions AS x ON x.rowid = r.rid
WHERE @wc = 0 OR @pc > 0 OR r.hrank + r.hheld <= @wc
ORDER BY r.priority, r.prank, r.created_at, r.id
LIMIT CAST(@limit AS INTEGER)`

// dequeueMarkSQL gives the runs @ids (a JSON array) their slots.
const dequeueMarkSQL = `UPDATE voltro_workflow_executions SET status = 'running', dequeued_at = @now, updated_at = @now
	WHERE id IN (SELECT value FROM json_each(@ids)) AND +status = 'queued'`

// dequeueOverfetch bounds the rows read past the room when a queue limits
// both partitions and holders (see dequeueHeadsSQL). Runs past it that
// could have been taken wait for a later Dequeue; none is ever over-handed.
const dequeueOverfetch = 256

// head is a row of dequeueHeadsSQL.
type head struct {
	id, name, shard, part, holder string
	pheld, hheld                  int
}

func (s *Store) Dequeue(ctx context.Context, req store.DequeueRequest) ([]store.Dequeued, error) {
	op := "dequeue from queue " + req.Queue
	var due bool
	if err := s.queryRowR(ctx, dequeueDueSQL, sql.Named("queue", req.Queue), sql.Named("now", s.now())).Scan(&due); err != nil {
		return nil, s.wrap(err, op)
	}
	if !due {
		return nil, nil
	}
	var out []store.Dequeued
	err := s.inTx(ctx, op, []string{getQueueSQL, dequeueSlotsSQL, dequeueHeadsSQL, dequeueMarkSQL, enqueueSQL, duplicateSQL},
		func(tx *sql.Tx) (bool, error) {
			var err error
			out, err = s.dequeueTx(ctx, tx, req)
			return len(out) > 0, err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// dequeueTx is Dequeue inside its write transaction. The clock is read here,
// with the write lock held, so no Dequeue that commits later stamps an
// earlier time.
func (s *Store) dequeueTx(ctx context.Context, tx *sql.Tx, req store.DequeueRequest) ([]store.Dequeued, error) {
	t := s.now()
	get, err := s.stmt(ctx, tx, getQueueSQL)
	if err != nil {
		return nil, err
	}
	l, err := scanQueue(get.QueryRowContext(ctx, req.Queue))
	if err == sql.ErrNoRows {
		return nil, nil // no limits stored: nothing is dequeued
	}
	if err != nil {
		return nil, fmt.Errorf("read the limits: %w", err)
	}
	slots, err := s.stmt(ctx, tx, dequeueSlotsSQL)
	if err != nil {
		return nil, err
	}
	var active, recent int
	rated := l.RateLimit > 0 && l.RatePeriod > 0
	if err := slots.QueryRowContext(ctx, sql.Named("queue", req.Queue), sql.Named("rated", rated),
		sql.Named("since", t-durMicros(l.RatePeriod))).Scan(&active, &recent); err != nil {
		return nil, fmt.Errorf("count the slots held: %w", err)
	}
	room := store.QueueRoom(l, active, recent, req.Max)
	if room == 0 {
		return nil, nil
	}
	heads, err := s.dequeueHeads(ctx, tx, l, room, t)
	if err != nil {
		return nil, err
	}
	picked := pickHeads(l, heads, room)
	if len(picked) == 0 {
		return nil, nil
	}
	return s.giveSlots(ctx, tx, picked, t)
}

// dequeueHeads reads the candidate runs of dequeueHeadsSQL for room.
func (s *Store) dequeueHeads(ctx context.Context, tx *sql.Tx, l store.QueueLimits, room int, t int64) ([]head, error) {
	limit := room // -1: no limit
	if room > 0 && l.PartitionConcurrency > 0 && l.WorkerConcurrency > 0 {
		limit = room + dequeueOverfetch
	}
	st, err := s.stmt(ctx, tx, dequeueHeadsSQL)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, sql.Named("queue", l.Name), sql.Named("now", t), sql.Named("pc", max(l.PartitionConcurrency, 0)),
		sql.Named("wc", max(l.WorkerConcurrency, 0)), sql.Named("limit", limit))
	if err != nil {
		return nil, fmt.Errorf("read the queued runs: %w", err)
	}
	defer rows.Close()
	var out []head
	for rows.Next() {
		var h head
		if err := rows.Scan(&h.id, &h.name, &h.shard, &h.part, &h.holder, &h.pheld, &h.hheld); err != nil {
			return nil, fmt.Errorf("read the queued runs: %w", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the queued runs: %w", err)
	}
	return out, nil
}

// pickHeads takes, in order, up to room heads (-1: all) whose partition and
// holder are below their limits, counting the ones it takes.
func pickHeads(l store.QueueLimits, heads []head, room int) []head {
	byPart, byHolder := map[string]int{}, map[string]int{}
	var out []head
	for _, h := range heads {
		if room >= 0 && len(out) >= room {
			break
		}
		p, ok := byPart[h.part]
		if !ok {
			p = h.pheld
		}
		o, ok := byHolder[h.holder]
		if !ok {
			o = h.hheld
		}
		if (l.PartitionConcurrency > 0 && p >= l.PartitionConcurrency) || (l.WorkerConcurrency > 0 && o >= l.WorkerConcurrency) {
			continue
		}
		byPart[h.part], byHolder[h.holder] = p+1, o+1
		out = append(out, h)
	}
	return out
}

// giveSlots moves the picked runs to running and enqueues their start
// messages, deliverable now, as StartExecution enqueues a run's.
func (s *Store) giveSlots(ctx context.Context, tx *sql.Tx, picked []head, t int64) ([]store.Dequeued, error) {
	ids := make([]string, len(picked))
	for i, h := range picked {
		ids[i] = h.id
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	mark, err := s.stmt(ctx, tx, dequeueMarkSQL)
	if err != nil {
		return nil, err
	}
	r, err := mark.ExecContext(ctx, sql.Named("ids", string(list)), sql.Named("now", t))
	if err != nil {
		return nil, fmt.Errorf("give the runs their slots: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil || n != int64(len(picked)) {
		// the write lock is held since the runs were read: cannot happen
		return nil, fmt.Errorf("give the runs their slots: %d of %d queued runs moved (%v)", n, len(picked), err)
	}
	out := make([]store.Dequeued, len(picked))
	for i, h := range picked {
		msg := store.StartMessageOf(store.Execution{ID: h.id, Name: h.name, Shard: h.shard})
		res, err := s.enqueueTx(ctx, tx, msg, nil, t)
		if err != nil {
			return nil, fmt.Errorf("enqueue the start message of %s: %w", h.id, err)
		}
		out[i] = store.Dequeued{ExecutionID: h.id, Name: h.name, Shard: h.shard, MessageID: res.ID}
	}
	return out, nil
}
