// Workflow runs: executions, their journal and signals (store.Workflows).
// The fenced run writes (WriteRuns) are gated on an EXISTS on
// voltro_shard_locks, the fence, and write that ledger row too (see
// fenceWrite); an update alone is one autocommit statement, anything more
// one transaction for all the writes of a call. The writes that touch several tables (StartExecution, SendSignal,
// RequestCancel) are one transaction, sent as a single multi-statement round
// trip on the batch pool when there is one and the server is not a Galera
// node (see batched), as an ordinary transaction otherwise.

package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// notTerminal is a WHERE condition on voltro_workflow_executions.status.
const notTerminal = "status NOT IN ('" + string(store.ExecCompleted) + "', '" + string(store.ExecFailed) + "', '" + string(store.ExecCancelled) + "')"

const execCols = `id, name, shard, idem_key, status, input, output, error, parent_id, parent_close,
	cancel_requested, waiting_on, runner, created_at, updated_at, finished_at,
	queue, partition_key, priority, start_at, dequeued_at`

// insertExec writes a run's queue columns too (a run not on a queue has
// queue NULL and the other columns' defaults): one statement for both
// kinds, so a batch mixes them.
const insertExec = `INSERT INTO voltro_workflow_executions (id, name, shard, idem_key, status, input, output, error,
	parent_id, parent_close, cancel_requested, waiting_on, runner, queue, partition_key, priority, start_at,
	created_at, updated_at, finished_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), NULL)`

// upsertStartContext overwrites a leftover row of an id that is new again.
const upsertStartContext = "INSERT INTO `_voltro_workflow_start_contexts` " +
	"(`executionId`, `subject`, `trace`, `source`, `parentId`, `parentClose`, `createdAt`) " +
	`VALUES (?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE
	` + "`subject` = VALUES(`subject`), `trace` = VALUES(`trace`), `source` = VALUES(`source`), " +
	"`parentId` = VALUES(`parentId`), `parentClose` = VALUES(`parentClose`), `createdAt` = VALUES(`createdAt`)"

// lastMessage reads back the message the session inserted last.
const lastMessage = "SELECT id, deliver_at, created_at, state FROM voltro_messages WHERE id = LAST_INSERT_ID()"

// keepDuplicate turns a dedupe conflict of a message INSERT into "no row".
const keepDuplicate = " ON DUPLICATE KEY UPDATE id = id"

// errExecExists stops the transaction of a start whose id exists.
var errExecExists = errors.New("execution exists")

// enqueued records on m and res what the store assigned to an inserted message.
func enqueued(m *store.Message, claim *store.EnqueueClaim, res *store.EnqueueResult, sm sentMessage) {
	m.ID, m.DeliverAt, m.CreatedAt, m.State = sm.id.Int64, sm.deliverAt.Time, sm.createdAt.Time, store.MessageState(sm.state.String)
	res.ID = sm.id.Int64
	if m.State == store.StateClaimed && claim != nil {
		res.ClaimedEpoch = claim.Epoch
	}
}

// sentMessage is what lastMessage reads (nullable: it may come from a LEFT JOIN).
type sentMessage struct {
	id                   sql.NullInt64
	deliverAt, createdAt sql.NullTime
	state                sql.NullString
}

func (sm *sentMessage) dest() []any {
	return []any{&sm.id, &sm.deliverAt, &sm.createdAt, &sm.state}
}

// batched reports whether multi-table writes go as one multi-statement
// transaction, on the batch pool. Open opens that pool unless the URL says
// multiStatements=false, the budget is one connection, or the server is a
// Galera node. Not on Galera: when a conflicting write-set from another node
// aborts the transaction (BF abort) while the server runs a DML statement of
// a multi-statement query, MariaDB 10.11 can swallow the 1213 and run the
// remaining statements in autocommit mode, committing the tail of a
// transaction whose head was rolled back (TestStartAndSignalRaceGalera
// caught it: two wakes for one stored signal). Statement by statement, the
// abort reliably surfaces as 1213 on the next statement or the COMMIT.
func (s *Store) batched() bool {
	return s.batch != nil && !s.server.galera
}

// txBatch runs stmts as "START TRANSACTION; …; COMMIT" in one round trip on
// one connection of the batch pool, under retry; stmts must be the store's
// own text (constants and placeholders), never anything from outside. The
// last statement is a SELECT whose rows scan reads (again on a re-run).
// Errors of the statements before it come back from the query, a failed
// COMMIT after the rows. On any error the transaction is rolled back on the
// same connection before it returns to the pool, and the connection is
// dropped if that fails.
func (s *Store) txBatch(ctx context.Context, stmts []string, args []any, scan func(*sql.Rows) error) error {
	query := "START TRANSACTION;\n" + strings.Join(stmts, ";\n") + ";\nCOMMIT"
	return s.retry(ctx, func() error {
		conn, err := s.batch.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		err = queryBatch(ctx, conn, query, args, scan)
		if err != nil {
			if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}
		return err
	})
}

func queryBatch(ctx context.Context, conn *sql.Conn, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := scan(rows); err != nil {
		return err
	}
	for rows.NextResultSet() {
		for rows.Next() {
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// scanOne reads at most one row into dest and reports whether there was one.
func scanOne(rows *sql.Rows, dest ...any) (bool, error) {
	if !rows.Next() {
		return false, rows.Err()
	}
	if err := rows.Scan(dest...); err != nil {
		return false, err
	}
	for rows.Next() {
	}
	return true, rows.Err()
}

func scanExec(r scanner) (store.Execution, error) {
	var x store.Execution
	var status string
	var queue sql.NullString
	var finished, startAt, dequeued sql.NullTime
	err := r.Scan(&x.ID, &x.Name, &x.Shard, &x.Key, &status, &x.Input, &x.Output, &x.Error, &x.ParentID, &x.ParentClose,
		&x.CancelRequested, &x.WaitingOn, &x.Runner, &x.CreatedAt, &x.UpdatedAt, &finished,
		&queue, &x.Partition, &x.Priority, &startAt, &dequeued)
	x.Status, x.FinishedAt = store.ExecStatus(status), timeOf(finished)
	x.Queue, x.StartAt, x.DequeuedAt = queue.String, timeOf(startAt), timeOf(dequeued)
	return x, err
}

func (s *Store) GetExecution(ctx context.Context, id string) (store.Execution, error) {
	x, err := scanExec(s.db.QueryRowContext(ctx, "SELECT "+execCols+" FROM voltro_workflow_executions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Execution{}, errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	}
	if err != nil {
		return store.Execution{}, wrapErr("get workflow execution", err)
	}
	return x, nil
}

// pollChunk bounds the ids of one PollExecutions statement.
const pollChunk = 500

// pollCols is execCols with the input of an unfinished run left out.
var pollCols = strings.Replace(execCols, "input,", "IF("+notTerminal+", NULL, input),", 1)

func (s *Store) PollExecutions(ctx context.Context, ids []string) ([]store.Execution, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids))) // once each, though in two chunks
	out := make([]store.Execution, 0, len(ids))
	for chunk := range slices.Chunk(ids, pollChunk) {
		rows, err := s.db.QueryContext(ctx, "SELECT "+pollCols+" FROM voltro_workflow_executions WHERE id IN ("+placeholders(len(chunk))+")", anys(chunk)...)
		if err != nil {
			return nil, wrapErr("poll workflow executions", err)
		}
		for rows.Next() {
			x, err := scanExec(rows)
			if err != nil {
				rows.Close()
				return nil, wrapErr("poll workflow executions", err)
			}
			out = append(out, x)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, wrapErr("poll workflow executions", err)
		}
	}
	return out, nil
}

func (s *Store) GetStartContext(ctx context.Context, id string) (store.StartContext, error) {
	sc := store.StartContext{ExecutionID: id}
	err := s.db.QueryRowContext(ctx, "SELECT `subject`, `trace`, `source`, `parentId`, `parentClose` "+
		"FROM `_voltro_workflow_start_contexts` WHERE `executionId` = ?", id).
		Scan(&sc.Subject, &sc.Trace, &sc.Source, &sc.ParentID, &sc.ParentClose)
	if errors.Is(err, sql.ErrNoRows) {
		return store.StartContext{}, errs.New(errs.CodeNotFound, "no start context for %q", id)
	}
	if err != nil {
		return store.StartContext{}, wrapErr("get start context", err)
	}
	return sc, nil
}

// ListExecutions orders by (created_at, id) descending, which every listing
// index serves (InnoDB appends the primary key to secondary indexes).
func (s *Store) ListExecutions(ctx context.Context, f store.ExecutionFilter) ([]store.Execution, error) {
	var where []string
	var args []any
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if f.Name != "" {
		where, args = append(where, "name = ?"), append(args, f.Name)
	}
	if f.ParentID != "" {
		where, args = append(where, "parent_id = ?"), append(args, f.ParentID)
	}
	if f.Queue != "" {
		where, args = append(where, "queue = ?"), append(args, f.Queue)
	}
	// the bounds in microseconds, the column's precision: a literal with
	// more digits is not a range the optimizer serves from the index (it
	// scans the whole index instead); rounded up, each comparison keeps
	// its meaning on microsecond values
	if !f.Since.IsZero() {
		where, args = append(where, "created_at >= ?"), append(args, ceilMicro(f.Since))
	}
	if !f.Until.IsZero() {
		where, args = append(where, "created_at < ?"), append(args, ceilMicro(f.Until))
	}
	if c := f.After; c != nil {
		// spelled out, not as a row comparison, with its bound on
		// created_at alone, so the range optimizer serves it from the
		// listing index (in the descending order asked) whatever the id
		// parameter's collation
		where = append(where, "created_at <= ? AND (created_at < ? OR id < ?)")
		at := c.CreatedAt.UTC().Truncate(time.Microsecond) // a listed run's own time: already microseconds
		args = append(args, at, at, c.ID)
	}
	q := "SELECT " + execCols + " FROM voltro_workflow_executions" + listIndex(f)
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, id DESC"
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrapErr("list workflow executions", err)
	}
	defer rows.Close()
	var out []store.Execution
	for rows.Next() {
		x, err := scanExec(rows)
		if err != nil {
			return nil, wrapErr("list workflow executions", err)
		}
		out = append(out, x)
	}
	return out, wrapErr("list workflow executions", rows.Err())
}

func (s *Store) Journal(ctx context.Context, id string) ([]store.JournalEntry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, kind, name, result, error, attempts, runner, started_at, finished_at
		FROM voltro_workflow_journal WHERE execution_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, wrapErr("read journal", err)
	}
	defer rows.Close()
	var out []store.JournalEntry
	for rows.Next() {
		e := store.JournalEntry{ExecutionID: id}
		var kind string
		var started sql.NullTime
		if err := rows.Scan(&e.Seq, &kind, &e.Name, &e.Result, &e.Error, &e.Attempts, &e.Runner, &started, &e.FinishedAt); err != nil {
			return nil, wrapErr("read journal", err)
		}
		e.Kind, e.StartedAt = store.JournalKind(kind), timeOf(started)
		out = append(out, e)
	}
	return out, wrapErr("read journal", rows.Err())
}

// ceilMicro is t in UTC rounded up to the microsecond.
func ceilMicro(t time.Time) time.Time {
	u := t.UTC().Truncate(time.Microsecond)
	if u.Before(t) {
		u = u.Add(time.Microsecond)
	}
	return u
}

// listIndex names the index a listing reads. MariaDB's optimizer, asked
// for ORDER BY created_at DESC LIMIT n with an equality and a bound on
// created_at, walks another index backwards from the newest row and
// filters (seconds at a million runs) instead of seeking the bound in the
// (column, created_at) index (milliseconds). With one filter column, its
// index; with several, status's (a status nobody is in ends the read at
// once).
func listIndex(f store.ExecutionFilter) string {
	switch {
	case f.Status != "":
		return " FORCE INDEX (idx_wf_exec_status)"
	case f.Name != "":
		return " FORCE INDEX (idx_wf_exec_name)"
	case f.ParentID != "":
		return " FORCE INDEX (idx_wf_exec_parent)"
	case f.After != nil || !f.Since.IsZero() || !f.Until.IsZero():
		return " FORCE INDEX (idx_wf_exec_created)"
	}
	return ""
}
