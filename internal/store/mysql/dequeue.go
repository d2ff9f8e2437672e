package mysql

// Dequeue: one READ COMMITTED transaction, serialized per queue by its row
// in _voltro_queues. On one server the SELECT … FOR UPDATE of that row makes
// every other dequeue of the queue wait until this one commits. On Galera
// that lock is the node's own, so a dequeue that hands out slots also
// writes the row: two nodes' concurrent dequeues then conflict at
// certification, and the one that loses fails with 1213 and runs again
// (inTx), reading what the winner did. Slots are counted from the run rows
// (holdsSlot), so a dequeue never over-hands whatever ended in between.
//
// Round trips, whatever the number of runs dequeued: the queue row, the
// slots in use, the heads, the lock of the runs picked, their update, their
// start messages and those messages' ids, the queue row's write; the count
// by shard holder only for a queue with a WorkerConcurrency.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// dequeueTx: READ COMMITTED, so every statement reads what was committed
// when it ran (the queue's lock is held by then), and the lock of a queue
// without a row takes no gap lock that would hold up a PutQueue.
var dequeueTx = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// lockQueue reads a queue's limits and the clock, and locks the queue's row.
const lockQueue = "SELECT " + queueCols + ", UTC_TIMESTAMP(6) FROM _voltro_queues WHERE name = ? FOR UPDATE"

// countSlots counts a queue's slots in use (args: queue), countRecent its
// dequeues after a time (args: queue, since): each reads an index's entries
// of the queue alone (idx_wf_exec_queue, idx_wf_exec_dequeued).
const (
	countSlots  = "SELECT COUNT(*) FROM voltro_workflow_executions WHERE queue = ? AND " + holdsSlot
	countRecent = "SELECT COUNT(*) FROM voltro_workflow_executions WHERE queue = ? AND dequeued_at > ?"
)

// slotsByOwner counts a queue's slots in use per holder of the runs' shards
// (an empty owner for a shard nobody holds).
const slotsByOwner = `SELECT COALESCE(k.owner, ''), COUNT(*) FROM voltro_workflow_executions e
	LEFT JOIN voltro_shard_locks k ON k.shard = e.shard
	WHERE e.queue = ? AND e.status IN ('running', 'suspended') AND e.dequeued_at IS NOT NULL
	GROUP BY COALESCE(k.owner, '')`

// workerOverfetch bounds how many heads beyond the room a dequeue reads
// for a queue with a WorkerConcurrency, whose filter (by shard holder) is
// applied in Go: runs passed over there leave room for later ones. A
// dequeue that passes over more than that leaves the rest of the room to
// the next one.
const workerOverfetch = 1000

// head is a queued run a dequeue may give a slot.
type head struct {
	id, name, shard, partition string
	held                       int    // its partition's runs holding a slot
	owner                      string // its shard's holder (read only for a WorkerConcurrency)
}

func (s *Store) Dequeue(ctx context.Context, req store.DequeueRequest) ([]store.Dequeued, error) {
	var out []store.Dequeued
	err := s.inTx(ctx, dequeueTx, func(tx *sql.Tx) error {
		var err error
		out, err = dequeueIn(ctx, tx, req)
		return err
	})
	if err != nil {
		return nil, wrapErr("dequeue "+req.Queue, err)
	}
	return out, nil
}

// dequeueIn is Dequeue's transaction.
func dequeueIn(ctx context.Context, tx *sql.Tx, req store.DequeueRequest) ([]store.Dequeued, error) {
	var now time.Time
	l, err := scanQueue(tx.QueryRowContext(ctx, lockQueue, req.Queue), &now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // no limits stored: nothing is dequeued
	}
	if err != nil {
		return nil, err
	}
	// The server's now has microseconds, and so have the bounds made from
	// it (a rate period is whole milliseconds): a time parameter with more
	// digits is no range the optimizer serves from an index (see
	// ListExecutions), which the rate window's count needs.
	now = now.Truncate(time.Microsecond)
	active, recent, err := slotsInUse(ctx, tx, l, now)
	if err != nil {
		return nil, err
	}
	room := store.QueueRoom(l, active, recent, req.Max)
	if room == 0 {
		return nil, nil
	}
	var byOwner map[string]int
	if l.WorkerConcurrency > 0 {
		if byOwner, err = ownerSlots(ctx, tx, l.Name); err != nil {
			return nil, err
		}
	}
	heads, err := queueHeads(ctx, tx, l, now, room)
	if err != nil {
		return nil, err
	}
	picked, err := lockHeads(ctx, tx, pick(l, heads, byOwner, room))
	if err != nil || len(picked) == 0 {
		return nil, err
	}
	return handOut(ctx, tx, l.Name, now, picked)
}

// slotsInUse counts what QueueRoom needs: the queue's slots in use when it
// has a Concurrency, its dequeues in the rate window when it has a rate
// limit.
func slotsInUse(ctx context.Context, tx *sql.Tx, l store.QueueLimits, now time.Time) (active, recent int, err error) {
	var cols []string
	var args, dest []any
	if l.Concurrency > 0 {
		cols = append(cols, "("+countSlots+")")
		args, dest = append(args, l.Name), append(dest, &active)
	}
	if l.RateLimit > 0 && l.RatePeriod > 0 {
		cols = append(cols, "("+countRecent+")")
		args, dest = append(args, l.Name, now.Add(-l.RatePeriod)), append(dest, &recent)
	}
	if len(cols) == 0 {
		return 0, 0, nil
	}
	err = tx.QueryRowContext(ctx, "SELECT "+strings.Join(cols, ", "), args...).Scan(dest...)
	return active, recent, err
}

// ownerSlots is slotsByOwner as a map.
func ownerSlots(ctx context.Context, tx *sql.Tx, queue string) (map[string]int, error) {
	out := map[string]int{}
	err := scanRows(ctx, tx, slotsByOwner, []any{queue}, func(rows *sql.Rows) error {
		var owner string
		var n int
		err := rows.Scan(&owner, &n)
		out[owner] = n
		return err
	})
	return out, err
}

// headsSQL selects a queue's eligible queued runs in Dequeue's order:
// priority, then partitions in turn (each one's runs ranked by priority,
// creation and id), then creation. The window reads only
// idx_wf_exec_queue's entries; name, shard and the shard's holder are
// looked up for the runs within the limit alone. With a
// PartitionConcurrency, each head carries its partition's slots in use,
// and a partition with none left is left out. Without a WorkerConcurrency
// that filter is exact, by rank: a partition's first runs up to its limit
// (rnk + held <= limit), so the room is read and no more. With one, some
// of those may be passed over in Go (their shard's holder is full), and a
// later run of the partition may then take the slot: only the full
// partitions are left out here, and pick counts the rest. Args: queue,
// now, [queue, PartitionConcurrency,] [limit] (limit < 0: no LIMIT).
func headsSQL(l store.QueueLimits, limit int) string {
	held, filter, owner, owners := "0", "", "''", ""
	if l.PartitionConcurrency > 0 {
		held = "COALESCE(a.n, 0)"
		filter = `
		LEFT JOIN (SELECT partition_key, COUNT(*) AS n FROM voltro_workflow_executions
			WHERE queue = ? AND ` + holdsSlot + ` GROUP BY partition_key) a ON a.partition_key = h.partition_key
		WHERE `
		if l.WorkerConcurrency > 0 {
			filter += "COALESCE(a.n, 0) < ?"
		} else {
			filter += "h.rnk + COALESCE(a.n, 0) <= ?"
		}
	}
	if l.WorkerConcurrency > 0 {
		owner, owners = "COALESCE(k.owner, '')", "\n\tLEFT JOIN voltro_shard_locks k ON k.shard = e.shard"
	}
	lim := ""
	if limit >= 0 {
		lim = " LIMIT ?"
	}
	return `SELECT e.id, e.name, e.shard, p.partition_key, p.held, ` + owner + `
	FROM (SELECT h.id, h.partition_key, h.priority, h.rnk, h.created_at, ` + held + ` AS held
		FROM (SELECT id, partition_key, priority, created_at,
				ROW_NUMBER() OVER (PARTITION BY partition_key ORDER BY priority, created_at, id) AS rnk
			FROM voltro_workflow_executions
			WHERE queue = ? AND status = 'queued' AND (start_at IS NULL OR start_at <= ?)) h` + filter + `
		ORDER BY h.priority, h.rnk, h.created_at, h.id` + lim + `) p
	JOIN voltro_workflow_executions e ON e.id = p.id` + owners + `
	ORDER BY p.priority, p.rnk, p.created_at, p.id`
}

// headsLimit is how many heads a dequeue with room reads (-1: all).
func headsLimit(l store.QueueLimits, room int) int {
	if room < 0 || l.WorkerConcurrency == 0 {
		return room
	}
	return room + min(max(3*room, 100), workerOverfetch)
}

// queueHeads reads the heads of l's queue a dequeue with room picks from.
func queueHeads(ctx context.Context, tx *sql.Tx, l store.QueueLimits, now time.Time, room int) ([]head, error) {
	limit := headsLimit(l, room)
	args := []any{l.Name, now}
	if l.PartitionConcurrency > 0 {
		args = append(args, l.Name, l.PartitionConcurrency)
	}
	if limit >= 0 {
		args = append(args, limit)
	}
	var out []head
	err := scanRows(ctx, tx, headsSQL(l, limit), args, func(rows *sql.Rows) error {
		var h head
		err := rows.Scan(&h.id, &h.name, &h.shard, &h.partition, &h.held, &h.owner)
		out = append(out, h)
		return err
	})
	return out, err
}

// pick walks heads in order and keeps up to room of them (room < 0: no
// cap), passing over a run whose partition has PartitionConcurrency slots
// in use or whose shard's holder has WorkerConcurrency, counting each run
// it keeps. byOwner (the slots in use per holder) is counted on.
func pick(l store.QueueLimits, heads []head, byOwner map[string]int, room int) []head {
	byPartition := map[string]int{}
	var out []head
	for _, h := range heads {
		if room >= 0 && len(out) >= room {
			break
		}
		if l.PartitionConcurrency > 0 {
			if _, seen := byPartition[h.partition]; !seen {
				byPartition[h.partition] = h.held
			}
			if byPartition[h.partition] >= l.PartitionConcurrency {
				continue
			}
		}
		if l.WorkerConcurrency > 0 && byOwner[h.owner] >= l.WorkerConcurrency {
			continue
		}
		byPartition[h.partition]++
		if byOwner != nil {
			byOwner[h.owner]++
		}
		out = append(out, h)
	}
	return out
}

// lockHeads locks the picked runs and keeps, in order, those still queued:
// the heads were read without locks, and a run may have been cancelled
// since (its slot is then left to the next dequeue).
func lockHeads(ctx context.Context, tx *sql.Tx, picked []head) ([]head, error) {
	if len(picked) == 0 {
		return nil, nil
	}
	ids := make([]any, len(picked))
	for i, h := range picked {
		ids[i] = h.id
	}
	queued := make(map[string]bool, len(picked))
	err := scanRows(ctx, tx, "SELECT id FROM voltro_workflow_executions WHERE id IN ("+placeholders(len(ids))+
		") AND status = 'queued' FOR UPDATE", ids, func(rows *sql.Rows) error {
		var id string
		err := rows.Scan(&id)
		queued[id] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	out := picked[:0]
	for _, h := range picked {
		if queued[h.id] {
			out = append(out, h)
		}
	}
	return out, nil
}

// handOut gives the picked (locked, queued) runs their slots: running,
// dequeued now, their start messages enqueued deliverable now (a start
// message already there under the run's start key is kept, and its id
// returned), and the queue's row written (see the file's comment).
func handOut(ctx context.Context, tx *sql.Tx, queue string, now time.Time, picked []head) ([]store.Dequeued, error) {
	ids := make([]any, len(picked))
	keys := make([]any, len(picked))
	var mq string
	var margs []any
	for i, h := range picked {
		ids[i] = h.id
		q, args, dkey, err := enqueueStmt(store.StartMessageOf(store.Execution{ID: h.id, Name: h.name, Shard: h.shard}), nil, "")
		if err != nil {
			return nil, err
		}
		mq, margs, keys[i] = q, append(margs, args...), dkey
	}
	res, err := tx.ExecContext(ctx, "UPDATE voltro_workflow_executions SET status = 'running', dequeued_at = ?, updated_at = ?"+
		" WHERE id IN ("+placeholders(len(ids))+") AND status = 'queued'", append([]any{now, now}, ids...)...)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, err
	} else if n != int64(len(picked)) {
		return nil, fmt.Errorf("%d of %d locked queued runs updated", n, len(picked))
	}
	if _, err := tx.ExecContext(ctx, multiRow(mq, len(picked))+keepDuplicate, margs...); err != nil {
		return nil, err
	}
	msgID := make(map[string]int64, len(picked))
	err = scanRows(ctx, tx, "SELECT dedupe_key, id FROM voltro_messages WHERE dedupe_key IN ("+placeholders(len(keys))+")", keys,
		func(rows *sql.Rows) error {
			var key []byte
			var id int64
			err := rows.Scan(&key, &id)
			msgID[string(key)] = id
			return err
		})
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE _voltro_queues SET dequeues = dequeues + ? WHERE name = ?", len(picked), queue); err != nil {
		return nil, err
	}
	out := make([]store.Dequeued, len(picked))
	for i, h := range picked {
		id, ok := msgID[string(keys[i].([]byte))]
		if !ok {
			return nil, fmt.Errorf("the start message of dequeued run %s is not there", h.id)
		}
		out[i] = store.Dequeued{ExecutionID: h.id, Name: h.name, Shard: h.shard, MessageID: id}
	}
	return out, nil
}
