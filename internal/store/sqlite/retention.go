package sqlite

// Retention: a sweep batch selects its candidates and deletes their rows
// in one BEGIN IMMEDIATE transaction on the write connection, so a run
// goes with every row that belongs to it or not at all, and the batch is
// short enough not to hold the write lock for long. A dry run reads on the
// read pool. Lists of keys travel as one JSON array parameter (json_each),
// which keeps every statement fixed and prepared once.

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// querier is a transaction or the read pool.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// sweepRunsSQL selects candidate runs (see store.SweepRuns): finished
// before @before, no unfinished parent, no start message undelivered or
// dead since @dead; dry run in id order after @after.
func sweepRunsSQL(dry bool) string {
	tail := `LIMIT @limit`
	if dry {
		tail = `AND e.id > @after ORDER BY e.id LIMIT @limit`
	}
	return `SELECT e.id FROM voltro_workflow_executions AS e
		WHERE e.status IN ('completed', 'failed', 'cancelled') AND e.created_at < @before
			AND (CASE WHEN e.finished_at = 0 THEN e.updated_at ELSE e.finished_at END) < @before
			AND NOT EXISTS (SELECT 1 FROM voltro_workflow_executions AS p
				WHERE p.id = e.parent_id AND p.status IN ('queued', 'running', 'suspended'))
			AND NOT EXISTS (SELECT 1 FROM voltro_messages AS m WHERE m.dedupe_key = '` + store.RunStartKey("") + `' || e.id
				AND (m.state IN ('pending', 'claimed') OR (m.state = 'dead' AND NOT m.processed_at < @dead)))
		` + tail
}

// The selections, real and dry run, by kind.
var sweepSelect = map[bool]map[store.SweepKind]string{
	false: {store.SweepRuns: sweepRunsSQL(false), store.SweepProcessed: sweepMessagesSQL(false),
		store.SweepDead: sweepMessagesSQL(false), store.SweepRunners: sweepRunnersSQL(false)},
	true: {store.SweepRuns: sweepRunsSQL(true), store.SweepProcessed: sweepMessagesSQL(true),
		store.SweepDead: sweepMessagesSQL(true), store.SweepRunners: sweepRunnersSQL(true)},
}

// runRows are the tables holding a run's rows, by the column naming it.
var runRows = []struct{ table, col string }{
	{store.TableExecutions, "id"},
	{store.TableJournal, "execution_id"},
	{store.TableSignals, "execution_id"},
	{store.TableStartContexts, `"executionId"`},
	{store.TableRuns, `"executionId"`},
	{store.TableRunSteps, `"executionId"`},
	{store.TableRunEvents, `"executionId"`},
}

// inIDs is the condition "col is one of the @ids JSON array".
func inIDs(col string) string { return col + ` IN (SELECT value FROM json_each(@ids))` }

// sqlStartMessages: the start messages of the runs @ids that may go with
// them (processed, or dead before @dead).
var sqlStartMessages = `SELECT id FROM voltro_messages
	WHERE dedupe_key IN (SELECT '` + store.RunStartKey("") + `' || value FROM json_each(@ids))
		AND (state = 'processed' OR (state = 'dead' AND processed_at < @dead))`

func sweepMessagesSQL(dry bool) string {
	if dry {
		return `SELECT id FROM voltro_messages WHERE state = @state AND processed_at < @before AND id > @after
			ORDER BY id LIMIT @limit`
	}
	return `SELECT id FROM voltro_messages WHERE state = @state AND processed_at < @before
		ORDER BY processed_at LIMIT @limit`
}

func sweepRunnersSQL(dry bool) string {
	after := ``
	if dry {
		after = `AND r.address > @after`
	}
	return `SELECT r.address FROM voltro_runners AS r
		WHERE r.last_heartbeat < @before ` + after + `
			AND NOT EXISTS (SELECT 1 FROM voltro_shard_locks AS l WHERE l.owner = r.address)
		ORDER BY r.address LIMIT @limit`
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
		b, err = s.sweepBatch(ctx, s.r, req)
		return b, s.wrap(err, op)
	}
	err := s.inTx(ctx, op, nil, func(tx *sql.Tx) (bool, error) {
		var err error
		b, err = s.sweepBatch(ctx, tx, req)
		return err == nil, err
	})
	return b, err
}

// sweepBatch selects one batch's candidates on q and deletes (dry run:
// counts) their rows there.
func (s *Store) sweepBatch(ctx context.Context, q querier, req store.SweepRequest) (store.SweepBatch, error) {
	var b store.SweepBatch
	limit := req.BatchLimit()
	args := []any{sql.Named("before", micros(req.Before)), sql.Named("limit", limit)}
	sel := sweepSelect[req.DryRun][req.Kind]
	switch req.Kind {
	case store.SweepRuns:
		args = append(args, sql.Named("after", req.After), sql.Named("dead", micros(req.DeadBefore)))
	case store.SweepProcessed, store.SweepDead:
		state := store.StateProcessed
		if req.Kind == store.SweepDead {
			state = store.StateDead
		}
		after := int64(0)
		if req.After != "" {
			n, err := strconv.ParseInt(req.After, 10, 64)
			if err != nil {
				return b, errs.New(errs.CodeInvalidArgument, "sweep cursor %q is not a message id", req.After)
			}
			after = n
		}
		args = append(args, sql.Named("after", after), sql.Named("state", string(state)))
	case store.SweepRunners:
		args = append(args, sql.Named("after", req.After))
	}
	keys, err := column(ctx, q, sel, args...)
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
	ids := textJSON(keys)
	if req.Kind == store.SweepProcessed || req.Kind == store.SweepDead {
		ids = intJSON(keys)
	}
	idsArg := sql.Named("ids", ids)
	// act deletes the rows of table matching cond (dry run: counts them).
	act := func(table, cond string) error {
		n, err := countOrDelete(ctx, q, req.DryRun, table, cond, idsArg)
		b.Add(table, n)
		return err
	}
	switch req.Kind {
	case store.SweepRuns:
		msgs, err := column(ctx, q, sqlStartMessages, idsArg, sql.Named("dead", micros(req.DeadBefore)))
		if err != nil {
			return b, err
		}
		for _, r := range runRows {
			if err := act(r.table, inIDs(r.col)); err != nil {
				return b, err
			}
		}
		if len(msgs) > 0 {
			if err := deleteMessages(ctx, q, req.DryRun, &b, intJSON(msgs)); err != nil {
				return b, err
			}
		}
	case store.SweepProcessed, store.SweepDead:
		return b, deleteMessages(ctx, q, req.DryRun, &b, ids)
	case store.SweepRunners:
		return b, act(store.TableRunners, inIDs("address"))
	}
	return b, nil
}

// textJSON is keys as a JSON array of strings.
func textJSON(keys []string) string {
	b, _ := json.Marshal(keys)
	return string(b)
}

// intJSON is integer keys as a JSON array of numbers (json_each then
// yields integers, which compare with an INTEGER column as such).
func intJSON(keys []string) string {
	b := []byte{'['}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, k...)
	}
	return string(append(b, ']'))
}

// deleteMessages deletes (dry run: counts) the messages of the JSON array
// ids and their replies (first: the replies' foreign key would cascade
// uncounted).
func deleteMessages(ctx context.Context, q querier, dry bool, b *store.SweepBatch, ids string) error {
	arg := sql.Named("ids", ids)
	n, err := countOrDelete(ctx, q, dry, store.TableReplies, inIDs("request_id"), arg)
	if err != nil {
		return err
	}
	b.Add(store.TableReplies, n)
	n, err = countOrDelete(ctx, q, dry, store.TableMessages, inIDs("id"), arg)
	b.Add(store.TableMessages, n)
	return err
}

func countOrDelete(ctx context.Context, q querier, dry bool, table, cond string, args ...any) (int64, error) {
	if dry {
		rows, err := q.QueryContext(ctx, `SELECT count(*) FROM `+table+` WHERE `+cond, args...)
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
	r, err := q.ExecContext(ctx, `DELETE FROM `+table+` WHERE `+cond, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// column runs a query of one text (or integer) column.
func column(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

const sqlOldestKept = `SELECT
	(SELECT min(c) FROM (
		SELECT * FROM (SELECT created_at AS c FROM voltro_workflow_executions WHERE status = 'completed' ORDER BY created_at LIMIT 1)
		UNION ALL SELECT * FROM (SELECT created_at FROM voltro_workflow_executions WHERE status = 'failed' ORDER BY created_at LIMIT 1)
		UNION ALL SELECT * FROM (SELECT created_at FROM voltro_workflow_executions WHERE status = 'cancelled' ORDER BY created_at LIMIT 1))),
	(SELECT min(processed_at) FROM voltro_messages WHERE state = 'processed'),
	(SELECT min(processed_at) FROM voltro_messages WHERE state = 'dead')`

func (s *Store) OldestKept(ctx context.Context) (store.Oldest, error) {
	o := store.Oldest{Now: fromMicros(s.now())}
	var run, proc, dead sql.NullInt64
	if err := s.r.QueryRowContext(ctx, sqlOldestKept).Scan(&run, &proc, &dead); err != nil {
		return o, s.wrap(err, "oldest kept")
	}
	o.Run, o.Processed, o.Dead = fromMicros(run.Int64), fromMicros(proc.Int64), fromMicros(dead.Int64)
	return o, nil
}
