package mysql

// Retention: a sweep batch selects its candidates and deletes their rows
// in one READ COMMITTED transaction, a statement at a time (the pool runs
// one statement per query). READ COMMITTED takes no gap locks, so deleting
// old rows never blocks a live insert next to them; the candidates are
// read without locks (finished rows are never written again) and every
// delete re-checks what could still change. On Galera a delete that
// conflicts with another node's write fails certification (1213) and the
// batch is run again (inTx).

import (
	"context"
	"database/sql"
	"strconv"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// startKeySQL is encodeDedupe(store.RunStartKey(id)) in SQL, for the id
// expression given: the start message's dedupe column, hashed as Enqueue
// hashes a long key. ("wf-start:" never starts with the hash prefix.)
func startKeySQL(id string) string {
	k := `CONCAT('` + store.RunStartKey("") + `', ` + id + `)`
	return `IF(LENGTH(` + k + `) <= ` + strconv.Itoa(maxDedupeKey) + `, CAST(` + k + ` AS BINARY), CAST(CONCAT('` +
		dedupeHashPrefix + `', SHA2(` + k + `, 256)) AS BINARY))`
}

// sweepRunsSQL selects candidate runs (see store.SweepRuns) with their
// start messages' keys: args before, before, dead (or NULL), [after,]
// limit.
func sweepRunsSQL(dry bool) string {
	tail := `LIMIT ?`
	if dry {
		tail = `AND e.id > ? ORDER BY e.id LIMIT ?`
	}
	return `SELECT e.id, ` + startKeySQL("e.id") + `
		FROM voltro_workflow_executions e
		WHERE e.status IN ('completed', 'failed', 'cancelled') AND e.created_at < ?
			AND COALESCE(e.finished_at, e.updated_at) < ?
			AND NOT EXISTS (SELECT 1 FROM voltro_workflow_executions p
				WHERE p.id = e.parent_id AND p.status IN ('running', 'suspended'))
			AND NOT EXISTS (SELECT 1 FROM voltro_messages m WHERE m.dedupe_key = ` + startKeySQL("e.id") + `
				AND (m.state IN ('pending', 'claimed') OR (m.state = 'dead' AND NOT COALESCE(m.processed_at < ?, FALSE))))
		` + tail
}

var (
	sqlSweepRuns    = sweepRunsSQL(false)
	sqlSweepRunsDry = sweepRunsSQL(true)
)

// runRows are the tables holding a run's rows, by the column naming it.
var runRows = []struct{ table, col string }{
	{store.TableExecutions, "id"},
	{store.TableJournal, "execution_id"},
	{store.TableSignals, "execution_id"},
	{store.TableStartContexts, "`executionId`"},
	{store.TableRuns, "`executionId`"},
	{store.TableRunSteps, "`executionId`"},
	{store.TableRunEvents, "`executionId`"},
}

// sweepTx is what a batch runs its statements on: a transaction, or the
// pool for a dry run.
type sweepTx interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (s *Store) Sweep(ctx context.Context, req store.SweepRequest) (store.SweepBatch, error) {
	var b store.SweepBatch
	if req.Before.IsZero() {
		return b, nil
	}
	switch req.Kind {
	case store.SweepRuns, store.SweepProcessed, store.SweepDead, store.SweepRunners:
	default:
		return b, errs.New(errs.CodeInvalidArgument, "unknown sweep kind %q", req.Kind)
	}
	op := "sweep " + string(req.Kind)
	if req.DryRun {
		var err error
		b, err = s.sweepBatch(ctx, s.db, req)
		return b, wrapErr(op, err)
	}
	err := s.inTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, func(tx *sql.Tx) error {
		var err error
		b, err = s.sweepBatch(ctx, tx, req)
		return err
	})
	return b, wrapErr(op, err)
}

func (s *Store) sweepBatch(ctx context.Context, q sweepTx, req store.SweepRequest) (store.SweepBatch, error) {
	var b store.SweepBatch
	limit := req.BatchLimit()
	before := req.Before.UTC()
	dead := nullTime(req.DeadBefore)
	var sel string
	var args []any
	switch req.Kind {
	case store.SweepRuns:
		sel, args = sqlSweepRuns, []any{before, before, dead, limit}
		if req.DryRun {
			sel, args = sqlSweepRunsDry, []any{before, before, dead, req.After, limit}
		}
	case store.SweepProcessed, store.SweepDead:
		state := string(store.StateProcessed)
		if req.Kind == store.SweepDead {
			state = string(store.StateDead)
		}
		sel, args = `SELECT id, '' FROM voltro_messages WHERE processed_at < ? AND state = ? ORDER BY processed_at LIMIT ?`, []any{before, state, limit}
		if req.DryRun {
			after := int64(0)
			if req.After != "" {
				n, err := strconv.ParseInt(req.After, 10, 64)
				if err != nil {
					return b, errs.New(errs.CodeInvalidArgument, "sweep cursor %q is not a message id", req.After)
				}
				after = n
			}
			sel = `SELECT id, '' FROM voltro_messages WHERE processed_at < ? AND state = ? AND id > ? ORDER BY id LIMIT ?`
			args = []any{before, state, after, limit}
		}
	case store.SweepRunners:
		sel = `SELECT address, '' FROM voltro_runners r WHERE r.last_heartbeat < ?
			AND NOT EXISTS (SELECT 1 FROM voltro_shard_locks l WHERE l.owner = r.address)`
		args = []any{before}
		if req.DryRun {
			sel += ` AND r.address > ?`
			args = append(args, req.After)
		}
		sel += ` ORDER BY r.address LIMIT ?`
		args = append(args, limit)
	}
	keys, extra, err := pairs(ctx, q, sel, args...)
	if err != nil {
		return b, err
	}
	b.More = len(keys) >= limit
	if len(keys) == 0 {
		return b, nil
	}
	if req.DryRun {
		b.Next = keys[len(keys)-1]
	}
	in := placeholders(len(keys))
	keyArgs := make([]any, len(keys))
	for i, k := range keys {
		keyArgs[i] = k
	}
	// act deletes the rows of table matching cond (dry run: counts them).
	act := func(table, cond string, args ...any) error {
		n, err := countOrDelete(ctx, q, req.DryRun, table, cond, args...)
		b.Add(table, n)
		return err
	}
	switch req.Kind {
	case store.SweepRuns:
		for _, r := range runRows {
			if err := act(r.table, r.col+` IN (`+in+`)`, keyArgs...); err != nil {
				return b, err
			}
		}
		startKeys := make([]any, 0, len(extra)+1)
		for _, k := range extra {
			startKeys = append(startKeys, []byte(k))
		}
		msgs, _, err := pairs(ctx, q, `SELECT id, '' FROM voltro_messages WHERE dedupe_key IN (`+placeholders(len(startKeys))+`)
			AND (state = 'processed' OR (state = 'dead' AND processed_at < ?))`, append(startKeys, dead)...)
		if err != nil {
			return b, err
		}
		return b, deleteMessages(ctx, q, req.DryRun, &b, msgs)
	case store.SweepProcessed, store.SweepDead:
		return b, deleteMessages(ctx, q, req.DryRun, &b, keys)
	case store.SweepRunners:
		// re-checked: a runner that beat again since, or took a lock, stays
		return b, act(store.TableRunners, `address IN (`+in+`) AND last_heartbeat < ?
			AND NOT EXISTS (SELECT 1 FROM voltro_shard_locks l WHERE l.owner = voltro_runners.address)`, append(keyArgs, before)...)
	}
	return b, nil
}

// deleteMessages deletes (dry run: counts) messages ids, unless a replay
// made one pending again since it was selected, and then the replies of
// the messages gone.
func deleteMessages(ctx context.Context, q sweepTx, dry bool, b *store.SweepBatch, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	in := placeholders(len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	if dry {
		n, err := countOrDelete(ctx, q, true, store.TableMessages, `id IN (`+in+`)`, args...)
		b.Add(store.TableMessages, n)
		if err != nil {
			return err
		}
		n, err = countOrDelete(ctx, q, true, store.TableReplies, `request_id IN (`+in+`)`, args...)
		b.Add(store.TableReplies, n)
		return err
	}
	r, err := q.ExecContext(ctx, `DELETE FROM voltro_messages WHERE id IN (`+in+`) AND state IN ('processed', 'dead')`, args...)
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return err
	}
	b.Add(store.TableMessages, n)
	r, err = q.ExecContext(ctx, `DELETE r FROM voltro_replies r LEFT JOIN voltro_messages m ON m.id = r.request_id
		WHERE r.request_id IN (`+in+`) AND m.id IS NULL`, args...)
	if err != nil {
		return err
	}
	n, err = r.RowsAffected()
	b.Add(store.TableReplies, n)
	return err
}

func countOrDelete(ctx context.Context, q sweepTx, dry bool, table, cond string, args ...any) (int64, error) {
	if dry {
		rows, err := q.QueryContext(ctx, "SELECT COUNT(*) FROM `"+table+"` WHERE "+cond, args...)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		var n int64
		if rows.Next() {
			if err := rows.Scan(&n); err != nil {
				return 0, err
			}
		}
		return n, rows.Err()
	}
	r, err := q.ExecContext(ctx, "DELETE FROM `"+table+"` WHERE "+cond, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// pairs runs a query of two text (or integer) columns.
func pairs(ctx context.Context, q sweepTx, query string, args ...any) (firsts, seconds []string, err error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			return nil, nil, err
		}
		firsts, seconds = append(firsts, a), append(seconds, b)
	}
	return firsts, seconds, rows.Err()
}

// sqlOldestKept reads the ends of the status and processed_at indexes
// (NULL processed_at, the unfinished messages, sort first: skipped).
const sqlOldestKept = `SELECT UTC_TIMESTAMP(6),
	(SELECT MIN(c) FROM (
		(SELECT created_at c FROM voltro_workflow_executions WHERE status = 'completed' ORDER BY created_at LIMIT 1)
		UNION ALL (SELECT created_at FROM voltro_workflow_executions WHERE status = 'failed' ORDER BY created_at LIMIT 1)
		UNION ALL (SELECT created_at FROM voltro_workflow_executions WHERE status = 'cancelled' ORDER BY created_at LIMIT 1)
	) o),
	(SELECT processed_at FROM voltro_messages WHERE processed_at IS NOT NULL AND state = 'processed' ORDER BY processed_at LIMIT 1),
	(SELECT MIN(processed_at) FROM voltro_messages WHERE state = 'dead')`

func (s *Store) OldestKept(ctx context.Context) (store.Oldest, error) {
	var o store.Oldest
	var run, proc, dead sql.NullTime
	if err := s.db.QueryRowContext(ctx, sqlOldestKept).Scan(&o.Now, &run, &proc, &dead); err != nil {
		return o, wrapErr("oldest kept", err)
	}
	o.Run, o.Processed, o.Dead = timeOf(run), timeOf(proc), timeOf(dead)
	return o, nil
}
