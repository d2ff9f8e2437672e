package postgres

// Dequeue: lock the queue's row, count the slots held, rank the eligible
// queued runs, and move the chosen ones to running with their start
// messages, all in one transaction (see queues.go).

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store"
)

// dequeueOverfetch is how many heads beyond the room a dequeue reads when
// the queue has a worker limit: the runs of holders that this dequeue
// fills up are skipped, and the next ones take their place. A dequeue
// that still comes short leaves the rest for the next one.
const dequeueOverfetch = 64

// head is a queued run Dequeue picked, and what its dequeue read back.
type head struct {
	x        store.Execution
	key      *string
	dequeued bool
	msg      enqueueScan
}

func (s *Store) Dequeue(ctx context.Context, req store.DequeueRequest) ([]store.Dequeued, error) {
	// READ COMMITTED whatever the server's default: each statement after
	// the lock must read the slots committed before it was granted.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, wrapErr("dequeue", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, sqlLockQueue, req.Queue)
	if err != nil {
		return nil, wrapErr("dequeue: lock the queue", err)
	}
	l, err := pgx.CollectExactlyOneRow(rows, scanQueue)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil // no limits stored: nothing is dequeued
	}
	if err != nil {
		return nil, wrapErr("dequeue: lock the queue", err)
	}
	heads, err := s.pickHeads(ctx, tx, l, req.Max)
	if err != nil || len(heads) == 0 {
		return nil, err
	}
	out, err := s.dequeueHeads(ctx, tx, heads)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, wrapErr("dequeue", err)
	}
	return out, nil
}

// pickHeads counts the slots held, and picks the runs the queue has room
// for under l, at most maxRuns (0: no cap), in dequeue order.
func (s *Store) pickHeads(ctx context.Context, tx pgx.Tx, l store.QueueLimits, maxRuns int) ([]*head, error) {
	byOwner := l.WorkerConcurrency > 0
	sl, err := countSlots(ctx, tx, l, byOwner)
	if err != nil {
		return nil, err
	}
	room := store.QueueRoom(l, sl.active, sl.recent, maxRuns)
	if room == 0 {
		return nil, nil
	}
	var limit *int
	if room > 0 {
		n := room
		if byOwner {
			n += dequeueOverfetch
		}
		limit = &n
	}
	parts, partN := keysAndCounts(sl.byPart)
	args := []any{l.Name, l.PartitionConcurrency, l.WorkerConcurrency, parts, partN, limit}
	if byOwner {
		holders, holderN := keysAndCounts(sl.byHolder)
		args = append(args, holders, holderN)
	}
	cands, walked, err := readHeads(ctx, tx, headsSQL(true, byOwner), args)
	if err == nil && !walked {
		cands, _, err = readHeads(ctx, tx, headsSQL(false, byOwner), args)
	}
	if err != nil {
		return nil, err
	}
	// The SQL passed over the partitions and holders full before this
	// dequeue; those it fills itself are counted here.
	var out []*head
	for _, c := range cands {
		if room > 0 && len(out) >= room {
			break
		}
		if l.PartitionConcurrency > 0 && sl.byPart[c.part] >= l.PartitionConcurrency {
			continue
		}
		if byOwner && sl.byHolder[c.owner] >= l.WorkerConcurrency {
			continue
		}
		sl.byPart[c.part]++
		sl.byHolder[c.owner]++
		out = append(out, &head{x: store.Execution{ID: c.id, Name: c.name, Shard: c.shard}})
	}
	return out, nil
}

// slots are the slots a queue's runs hold, and its recent dequeues.
type slots struct {
	active, recent   int
	byPart, byHolder map[string]int
}

func countSlots(ctx context.Context, tx pgx.Tx, l store.QueueLimits, byOwner bool) (slots, error) {
	sl := slots{byPart: map[string]int{}, byHolder: map[string]int{}}
	q := sqlQueueSlots
	if byOwner {
		q = sqlQueueSlotsByOwner
	}
	var window int64 // stored in whole milliseconds
	if l.RateLimit > 0 {
		window = l.RatePeriod.Milliseconds()
	}
	rows, err := tx.Query(ctx, q, l.Name, window)
	if err != nil {
		return sl, wrapErr("dequeue: count the slots", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p, o *string
		var n *int
		if err := rows.Scan(&sl.recent, &p, &o, &n); err != nil {
			return sl, wrapErr("dequeue: count the slots", err)
		}
		if p != nil {
			sl.active += *n
			sl.byPart[*p] += *n
			sl.byHolder[*o] += *n
		}
	}
	if err := rows.Err(); err != nil {
		return sl, wrapErr("dequeue: count the slots", err)
	}
	return sl, nil
}

// candidate is a row of the heads statement.
type candidate struct {
	id, name, shard, part, owner string
}

// readHeads runs a heads statement; walked is false when it was the walk
// and the queue has too many partitions for it (nothing was read).
func readHeads(ctx context.Context, tx pgx.Tx, q string, args []any) (out []candidate, walked bool, err error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, false, wrapErr("dequeue: read the queued runs", err)
	}
	defer rows.Close()
	walked = true
	for rows.Next() {
		var id, name, shard, part, owner *string
		if err := rows.Scan(&id, &name, &shard, &part, &owner); err != nil {
			return nil, false, wrapErr("dequeue: read the queued runs", err)
		}
		if id == nil {
			walked = false
			continue
		}
		out = append(out, candidate{id: *id, name: *name, shard: *shard, part: *part, owner: *owner})
	}
	if err := rows.Err(); err != nil {
		return nil, false, wrapErr("dequeue: read the queued runs", err)
	}
	return out, walked, nil
}

// dequeueHeads moves the picked runs to running and enqueues their start
// messages, in one round trip, in dequeue order (the messages' ids, and so
// their delivery, follow it).
func (s *Store) dequeueHeads(ctx context.Context, tx pgx.Tx, heads []*head) ([]store.Dequeued, error) {
	b := &pgx.Batch{}
	for _, h := range heads {
		args, key, err := s.enqueueArgs(store.StartMessageOf(h.x), nil, h.x.ID)
		if err != nil {
			return nil, err
		}
		h.key = key
		b.Queue(sqlDequeueRun, args...).QueryRow(func(r pgx.Row) error {
			return r.Scan(append([]any{&h.dequeued}, h.msg.dest()...)...)
		})
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, wrapErr("dequeue: start the runs", err)
	}
	out := make([]store.Dequeued, 0, len(heads))
	for _, h := range heads {
		if !h.dequeued {
			continue // cancelled meanwhile
		}
		d := store.Dequeued{ExecutionID: h.x.ID, Name: h.x.Name, Shard: h.x.Shard}
		switch {
		case h.msg.id != nil:
			d.MessageID = *h.msg.id
		case h.msg.dupID != nil:
			d.MessageID = *h.msg.dupID
		default:
			// The key's holder committed while the insert waited on it:
			// read it afresh, in the transaction (the pool may be full of
			// dequeues waiting for this one's lock).
			var payload, rErr []byte
			var created any
			if err := tx.QueryRow(ctx, sqlDuplicate, *h.key).Scan(&d.MessageID, &payload, &rErr, &created); err != nil {
				return nil, wrapErr("dequeue: read the start message", err)
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// keysAndCounts splits m into parallel arrays, for unnest.
func keysAndCounts(m map[string]int) ([]string, []int64) {
	keys, counts := make([]string, 0, len(m)), make([]int64, 0, len(m))
	for k, n := range m {
		keys, counts = append(keys, k), append(counts, int64(n))
	}
	return keys, counts
}
