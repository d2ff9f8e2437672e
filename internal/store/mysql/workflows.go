// Workflow runs: executions, their journal and signals (store.WorkflowStore).
// The fenced run writes (WriteRuns) are gated on an EXISTS on
// voltro_shard_locks, the fence; a single journal entry or update is one
// autocommit statement, anything more one transaction for all the writes of
// a call. The writes that touch several tables (StartExecution, SendSignal,
// RequestCancel) are one transaction, sent as a single multi-statement round
// trip on the batch pool when there is one and the server is not a Galera
// node (see batched), as an ordinary transaction otherwise.

package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

var _ store.WorkflowStore = (*Store)(nil)

// notTerminal is a WHERE condition on voltro_workflow_executions.status.
const notTerminal = "status NOT IN ('" + string(store.ExecCompleted) + "', '" + string(store.ExecFailed) + "', '" + string(store.ExecCancelled) + "')"

const execCols = `id, name, shard, idem_key, status, input, output, error, parent_id, parent_close,
	cancel_requested, waiting_on, runner, created_at, updated_at, finished_at`

const insertExec = `INSERT INTO voltro_workflow_executions (id, name, shard, idem_key, status, input, output, error,
	parent_id, parent_close, cancel_requested, waiting_on, runner, created_at, updated_at, finished_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), NULL)`

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

// readStarted reads back, after a start's inserts, the run's timestamps and
// the start message the session inserted last (args: the run's id).
const readStarted = `SELECT e.created_at, e.updated_at, m.id, m.deliver_at, m.created_at, m.state
	FROM voltro_workflow_executions e LEFT JOIN voltro_messages m ON m.id = LAST_INSERT_ID() WHERE e.id = ?`

// startArgs are insertExec's and upsertStartContext's arguments for a start.
func startArgs(x store.Execution, sc store.StartContext) (execArgs, scArgs []any) {
	return []any{x.ID, x.Name, x.Shard, x.Key, string(x.Status), x.Input, x.Output, x.Error,
			x.ParentID, x.ParentClose, x.CancelRequested, x.WaitingOn, x.Runner},
		[]any{x.ID, sc.Subject, sc.Trace, sc.Source, sc.ParentID, sc.ParentClose}
}

func (s *Store) StartExecution(ctx context.Context, x store.Execution, sc store.StartContext, start *store.Message, claim *store.EnqueueClaim) (store.Execution, bool, store.EnqueueResult, error) {
	var res store.EnqueueResult
	x.Status = store.ExecRunning
	x.FinishedAt = time.Time{}
	execArgs, scArgs := startArgs(x, sc)
	var mq string
	var margs []any
	var dkey any
	if start != nil {
		var err error
		if mq, margs, dkey, err = enqueueStmt(start, claim, ""); err != nil {
			return store.Execution{}, false, res, err
		}
	}

	if s.batched() {
		stmts := []string{insertExec, upsertStartContext}
		args := append(append([]any{}, execArgs...), scArgs...)
		final := "SELECT e.created_at, e.updated_at FROM voltro_workflow_executions e WHERE e.id = ?"
		if start != nil {
			stmts = append(stmts, mq)
			args = append(args, margs...)
			final = readStarted
		}
		args = append(args, x.ID)
		var sm sentMessage
		err := s.txBatch(ctx, append(stmts, final), args, func(rows *sql.Rows) error {
			dest := []any{&x.CreatedAt, &x.UpdatedAt}
			if start != nil {
				dest = append(dest, sm.dest()...)
			}
			ok, err := scanOne(rows, dest...)
			if err == nil && !ok {
				err = errors.New("the inserted execution is not there")
			}
			return err
		})
		if err == nil {
			if start != nil {
				enqueued(start, claim, &res, sm)
			}
			return x, false, res, nil
		}
		if !isDuplicate(err) {
			return store.Execution{}, false, res, wrapErr("start workflow execution", err)
		}
		// The id exists (the common case of a duplicate), or the start
		// message's dedupe key does: the transaction below tells which.
		old, gerr := s.GetExecution(ctx, x.ID)
		if gerr == nil {
			return old, true, store.EnqueueResult{}, nil
		}
		if !errors.Is(gerr, errs.ErrNotFound) {
			return store.Execution{}, false, res, gerr
		}
	}

	dup := false
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, dup = store.EnqueueResult{}, false
		if _, err := tx.ExecContext(ctx, insertExec, execArgs...); isDuplicate(err) {
			return errExecExists
		} else if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, upsertStartContext, scArgs...); err != nil {
			return err
		}
		if start == nil {
			return tx.QueryRowContext(ctx, "SELECT created_at, updated_at FROM voltro_workflow_executions WHERE id = ?", x.ID).
				Scan(&x.CreatedAt, &x.UpdatedAt)
		}
		r, err := tx.ExecContext(ctx, mq+keepDuplicate, margs...)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		dup = n == 0
		var sm sentMessage
		err = tx.QueryRowContext(ctx, `SELECT e.created_at, e.updated_at, m.id, m.deliver_at, m.created_at, m.state
			FROM voltro_workflow_executions e LEFT JOIN voltro_messages m ON ? AND m.id = LAST_INSERT_ID() WHERE e.id = ?`, !dup, x.ID).
			Scan(append([]any{&x.CreatedAt, &x.UpdatedAt}, sm.dest()...)...)
		if err == nil && !dup {
			enqueued(start, claim, &res, sm)
		}
		return err
	})
	if errors.Is(err, errExecExists) {
		old, err := s.GetExecution(ctx, x.ID)
		if err != nil {
			return store.Execution{}, false, store.EnqueueResult{}, err
		}
		return old, true, store.EnqueueResult{}, nil
	}
	if err != nil {
		return store.Execution{}, false, store.EnqueueResult{}, wrapErr("start workflow execution", err)
	}
	if dup {
		if res, err = s.duplicate(ctx, dkey); err != nil {
			return store.Execution{}, false, res, err
		}
	}
	return x, false, res, nil
}

var _ store.BatchStarter = (*Store)(nil)

// StartExecutions writes a batch of starts as one multi-statement
// transaction, one round trip, where the pool batches (see batched); one
// start at a time otherwise. A run or start message that exists fails the
// batch as a whole (the caller then starts them one by one, which sorts out
// which).
func (s *Store) StartExecutions(ctx context.Context, reqs []store.StartRequest) ([]store.StartOutcome, error) {
	out := make([]store.StartOutcome, len(reqs))
	if !s.batched() {
		for i, q := range reqs {
			o := &out[i]
			o.Stored, o.Existing, o.Result, o.Err = s.StartExecution(ctx, q.Exec, q.Context, q.Message, q.Claim)
		}
		return out, nil
	}
	stmts := make([]string, 0, 4*len(reqs))
	var args []any
	for i, q := range reqs {
		x, sc := q.Exec, q.Context
		if x.ID == "" || q.Message == nil {
			return nil, errs.New(errs.CodeInvalidArgument, "start %d of the batch has no id or no start message", i)
		}
		mq, margs, _, err := enqueueStmt(q.Message, q.Claim, "")
		if err != nil {
			return nil, err
		}
		x.Status = store.ExecRunning
		execArgs, scArgs := startArgs(x, sc)
		stmts = append(stmts, insertExec, upsertStartContext, mq, readStarted)
		args = append(append(append(append(args, execArgs...), scArgs...), margs...), x.ID)
	}
	sms := make([]sentMessage, len(reqs))
	err := s.txBatch(ctx, stmts, args, func(rows *sql.Rows) error {
		for i := range reqs {
			if i > 0 && !rows.NextResultSet() {
				if err := rows.Err(); err != nil {
					return err
				}
				return fmt.Errorf("start batch: %d result sets for %d starts", i, len(reqs))
			}
			x := &out[i].Stored
			ok, err := scanOne(rows, append([]any{&x.CreatedAt, &x.UpdatedAt}, sms[i].dest()...)...)
			if err == nil && !ok {
				err = errors.New("an inserted execution is not there")
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapErr("start executions", err)
	}
	for i, q := range reqs {
		o := &out[i]
		created, updated := o.Stored.CreatedAt, o.Stored.UpdatedAt
		o.Stored = q.Exec
		o.Stored.Status, o.Stored.FinishedAt = store.ExecRunning, time.Time{}
		o.Stored.CreatedAt, o.Stored.UpdatedAt = created, updated
		enqueued(q.Message, q.Claim, &o.Result, sms[i])
	}
	return out, nil
}

func scanExec(r scanner) (store.Execution, error) {
	var x store.Execution
	var status string
	var finished sql.NullTime
	err := r.Scan(&x.ID, &x.Name, &x.Shard, &x.Key, &status, &x.Input, &x.Output, &x.Error, &x.ParentID, &x.ParentClose,
		&x.CancelRequested, &x.WaitingOn, &x.Runner, &x.CreatedAt, &x.UpdatedAt, &finished)
	x.Status, x.FinishedAt = store.ExecStatus(status), timeOf(finished)
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
	q := "SELECT " + execCols + " FROM voltro_workflow_executions"
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

// fenceSQL is true while the shard's ledger row names the owner at the epoch.
const fenceSQL = "EXISTS (SELECT 1 FROM voltro_shard_locks WHERE shard = ? AND owner = ? AND epoch = ?)"

// Run writes (store.RunWriter). A write is up to four statements, each
// gated on the one before it having changed its row: the journal entry
// (inserted only through the fence and only for a run that exists), the
// run's update (through the fence, only while the run is not terminal), the
// completion of the message that ran the replay (only while it is claimed at
// the fence) and its empty reply. What tells fenced, not found and already
// exists apart is read only when one of them changed nothing.

// entryInsert appends a journal entry through the fence, for a run that
// exists (args: entryArgs).
const entryInsert = `INSERT INTO voltro_workflow_journal
	(execution_id, seq, kind, name, result, error, attempts, runner, started_at, finished_at)
	SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)) FROM DUAL
	WHERE ` + fenceSQL + ` AND EXISTS (SELECT 1 FROM voltro_workflow_executions WHERE id = ?)`

// keepEntry turns the key conflict of an entry that exists into "no row"
// where an error would end a multi-statement batch.
const keepEntry = " ON DUPLICATE KEY UPDATE seq = voltro_workflow_journal.seq"

func entryArgs(w store.RunWrite) []any {
	e := w.Entry
	return []any{e.ExecutionID, e.Seq, string(e.Kind), e.Name, e.Result, e.Error, e.Attempts, e.Runner,
		nullTime(e.StartedAt), nullTime(e.FinishedAt), w.Shard, w.Fence.Owner, w.Fence.Epoch, e.ExecutionID}
}

// runUpdate sets the run's state through the write's fence while the run is
// not terminal, and only when gate (a condition, or "") holds.
func runUpdate(w store.RunWrite, gate string) (string, []any) {
	u := w.Update
	set := "status = ?, waiting_on = ?, updated_at = UTC_TIMESTAMP(6)"
	args := []any{string(u.Status), u.WaitingOn}
	if u.Runner != "" {
		set += ", runner = ?"
		args = append(args, u.Runner)
	}
	if u.Status.Terminal() {
		set += ", output = ?, error = ?, finished_at = UTC_TIMESTAMP(6)"
		args = append(args, u.Output, u.Error)
	}
	args = append(args, u.ID, w.Shard, w.Fence.Owner, w.Fence.Epoch)
	return "UPDATE voltro_workflow_executions SET " + set + " WHERE id = ? AND " + notTerminal + " AND " + fenceSQL + and(gate), args
}

// messageDone marks the write's message processed while it is claimed at
// the write's fence (args: messageArgs).
const messageDone = `UPDATE voltro_messages SET state = 'processed', processed_at = UTC_TIMESTAMP(6), claim_expires_at = NULL
	WHERE id = ? AND shard = ? AND state = 'claimed' AND claimed_by = ? AND claim_epoch = ?`

func messageArgs(w store.RunWrite) []any {
	return []any{w.Message, w.Shard, w.Fence.Owner, w.Fence.Epoch}
}

// emptyReply is the reply row of a completed workflow message, as Complete
// stores one (without payload: nobody waits on a workflow message's reply).
func emptyReply(gate string) string {
	where := ""
	if gate != "" {
		where = " WHERE " + gate
	}
	return `INSERT INTO voltro_replies (request_id, created_at) SELECT ?, UTC_TIMESTAMP(6) FROM DUAL` + where +
		" ON DUPLICATE KEY UPDATE request_id = voltro_replies.request_id"
}

func and(gate string) string {
	if gate == "" {
		return ""
	}
	return " AND " + gate
}

// runStateCols read what judges a write that changed nothing: whether the
// fence holds, the run's status (NULL: no such run) and whether the entry
// exists (args: stateArgs).
const runStateCols = fenceSQL + `, (SELECT status FROM voltro_workflow_executions WHERE id = ?),
	EXISTS (SELECT 1 FROM voltro_workflow_journal WHERE execution_id = ? AND seq = ?)`

func stateArgs(w store.RunWrite) []any {
	id, eid, seq := w.ExecutionID(), "", -1
	if w.Entry != nil {
		eid, seq = w.Entry.ExecutionID, w.Entry.Seq
	}
	return []any{w.Shard, w.Fence.Owner, w.Fence.Epoch, id, eid, seq}
}

// runState is what runStateCols read.
type runState struct {
	held   bool
	status sql.NullString
	entry  bool
}

// judge names what kept w from happening, given which of its statements
// changed their row (each runs only if the one before it did) and, if one
// did not, st, the state read afterwards. again reports a miss the state
// does not explain, which a Galera node that had not yet applied the
// latest writes when the statement ran (wsrep_sync_wait makes reads causal,
// not these writes) can cause: a causal read and another try settle it.
func judge(w store.RunWrite, inserted, updated, completed bool, st runState) (out error, again bool) {
	id := w.ExecutionID()
	fenced := func() error {
		return errs.New(errs.CodeFenced, "write for %s: shard %s is not held by %s at epoch %d", id, w.Shard, w.Fence.Owner, w.Fence.Epoch)
	}
	switch {
	case w.Entry != nil && !inserted:
		switch {
		case !st.held:
			return fenced(), false
		case !st.status.Valid:
			return errs.New(errs.CodeNotFound, "no workflow execution %q", id), false
		case st.entry:
			return errs.New(errs.CodeAlreadyExists, "journal entry %s#%d exists", w.Entry.ExecutionID, w.Entry.Seq), false
		}
		return fenced(), true
	case w.Update != nil && !updated:
		switch {
		case !st.held:
			return fenced(), false
		case !st.status.Valid:
			return errs.New(errs.CodeNotFound, "no workflow execution %q", id), false
		case store.ExecStatus(st.status.String).Terminal():
			return errs.New(errs.CodeAlreadyExists, "workflow execution %q is already %s", id, st.status.String), false
		}
		// matched, but nothing to change (or not applied here yet); the
		// message, if any, was not completed
		again = true
	}
	if w.Message != 0 && !completed {
		return errs.New(errs.CodeFenced, "workflow execution %q was written, but message %d is not claimed by %s at epoch %d",
			id, w.Message, w.Fence.Owner, w.Fence.Epoch), again
	}
	return nil, again
}

// lagging reports outcomes a Galera node behind the cluster can produce
// for writes that would succeed: a ledger row, a run or a claim written on
// another node and not applied here yet.
func lagging(out []error) bool {
	for _, err := range out {
		if errors.Is(err, errs.ErrFenced) || errors.Is(err, errs.ErrNotFound) {
			return true
		}
	}
	return false
}

// errLagging rolls back a first try on Galera that may have missed writes
// of other nodes.
var errLagging = errors.New("a write missed what may not be applied on this node yet")

// WriteRuns sends a write that is one statement (an entry, or an update)
// alone in autocommit, as AppendJournal and UpdateExecution did: one round
// trip. Anything else is one transaction for the whole slice, re-run whole
// after a deadlock: with multi statements on and no Galera (see batched),
// one round trip (writeBatch); otherwise statement by statement
// (writeStepwise), 2 + one per statement round trips. On Galera the
// statements of a transaction are not causal reads: a first try whose
// outcomes include fenced or not found is rolled back and, after a causal
// read, run once more.
func (s *Store) WriteRuns(ctx context.Context, ws []store.RunWrite) ([]error, error) {
	for _, w := range ws {
		if err := store.CheckRunWrite(w); err != nil {
			return nil, err
		}
	}
	switch {
	case len(ws) == 0:
		return []error{}, nil
	case len(ws) == 1 && ws[0].Message == 0 && (ws[0].Entry == nil) != (ws[0].Update == nil):
		out, err := s.writeAlone(ctx, ws[0])
		if err != nil {
			return nil, wrapErr("write runs", err)
		}
		return []error{out}, nil
	case s.batched():
		out, err := s.writeBatch(ctx, ws)
		return out, wrapErr("write runs", err)
	}
	var out []error
	err := s.inTx(ctx, nil, func(tx *sql.Tx) (err error) {
		out, err = writeStepwise(ctx, tx, ws)
		if err == nil && s.server.galera && lagging(out) {
			return errLagging
		}
		return err
	})
	if errors.Is(err, errLagging) {
		// A causal read (any table will do) makes this node apply what
		// the cluster committed before it; the second try is final.
		var n int
		if err = s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM voltro_shard_locks WHERE shard = ?", ws[0].Shard).Scan(&n); err == nil {
			err = s.inTx(ctx, nil, func(tx *sql.Tx) (err error) {
				out, err = writeStepwise(ctx, tx, ws)
				return err
			})
		}
	}
	if err != nil {
		return nil, wrapErr("write runs", err)
	}
	return out, nil
}

// writeAlone applies a write that is one statement in autocommit. When it
// changed nothing, a read (causal on Galera) says why; if that read says it
// should have happened, it is tried once more.
func (s *Store) writeAlone(ctx context.Context, w store.RunWrite) (error, error) {
	var query string
	var args []any
	if w.Entry != nil {
		query, args = entryInsert, entryArgs(w)
	} else {
		query, args = runUpdate(w, "")
	}
	for attempt := 1; ; attempt++ {
		res, err := s.exec(ctx, query, args...)
		if isDuplicate(err) {
			return errs.New(errs.CodeAlreadyExists, "journal entry %s#%d exists", w.Entry.ExecutionID, w.Entry.Seq), nil
		}
		if err != nil {
			return nil, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, nil
		}
		st, err := readRunStates(ctx, s.db, []store.RunWrite{w}, []int{0})
		if err != nil {
			return nil, err
		}
		out, again := judge(w, false, false, false, st[0])
		if !again || attempt > 1 {
			return out, nil
		}
	}
}

// writeStepwise runs the writes statement by statement in tx, gated in Go,
// and reads the state of the writes that missed once at the end. An entry
// that exists ends its write with a key conflict, which undoes only that
// statement.
func writeStepwise(ctx context.Context, tx *sql.Tx, ws []store.RunWrite) ([]error, error) {
	type done struct{ inserted, updated, completed, exists bool }
	dones := make([]done, len(ws))
	var missed []int
	changed := func(query string, args ...any) (bool, error) {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n > 0, err
	}
	for i, w := range ws {
		d := &dones[i]
		var err error
		if w.Entry != nil {
			d.inserted, err = changed(entryInsert, entryArgs(w)...)
			if isDuplicate(err) {
				d.exists, err = true, nil
			}
			if err != nil {
				return nil, err
			}
			if !d.inserted {
				if !d.exists {
					missed = append(missed, i)
				}
				continue
			}
		}
		if w.Update != nil {
			query, args := runUpdate(w, "")
			if d.updated, err = changed(query, args...); err != nil {
				return nil, err
			}
			if !d.updated {
				missed = append(missed, i)
				continue
			}
		}
		if w.Message != 0 {
			if d.completed, err = changed(messageDone, messageArgs(w)...); err != nil {
				return nil, err
			}
			if d.completed {
				if _, err := tx.ExecContext(ctx, emptyReply(""), w.Message); err != nil {
					return nil, err
				}
			}
		}
	}
	states := make([]runState, len(ws))
	if len(missed) > 0 {
		st, err := readRunStates(ctx, tx, ws, missed)
		if err != nil {
			return nil, err
		}
		for k, i := range missed {
			states[i] = st[k]
		}
	}
	out := make([]error, len(ws))
	for i, w := range ws {
		d := dones[i]
		if d.exists {
			out[i] = errs.New(errs.CodeAlreadyExists, "journal entry %s#%d exists", w.Entry.ExecutionID, w.Entry.Seq)
			continue
		}
		out[i], _ = judge(w, d.inserted, d.updated, d.completed, states[i])
	}
	return out, nil
}

type queryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// readRunStates reads runStateCols for the writes ws[idx] in one query.
func readRunStates(ctx context.Context, q queryer, ws []store.RunWrite, idx []int) ([]runState, error) {
	sels := make([]string, len(idx))
	var args []any
	for k, i := range idx {
		sels[k] = fmt.Sprintf("SELECT %d, %s", k, runStateCols)
		args = append(args, stateArgs(ws[i])...)
	}
	rows, err := q.QueryContext(ctx, strings.Join(sels, "\nUNION ALL "), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]runState, len(idx))
	n := 0
	for rows.Next() {
		var k int
		var st runState
		if err := rows.Scan(&k, &st.held, &st.status, &st.entry); err != nil {
			return nil, err
		}
		if k < 0 || k >= len(out) {
			return nil, fmt.Errorf("run state of write %d of %d", k, len(out))
		}
		out[k] = st
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if n != len(out) {
		return nil, fmt.Errorf("%d run states for %d writes", n, len(out))
	}
	return out, nil
}

// writeBatch sends every write as one multi-statement transaction, one
// round trip: within a write, each statement is gated on ROW_COUNT() of the
// one before it, and the driver returns what each statement changed. Only
// when a write missed is its state read, after the commit; should that read
// fail, the outcome of those writes (of which nothing was written) is its
// error.
func (s *Store) writeBatch(ctx context.Context, ws []store.RunWrite) ([]error, error) {
	const changedOne = "ROW_COUNT() > 0"
	stmts := []string{"START TRANSACTION"}
	var args []any
	type stmtOf struct{ entry, update, message int } // index in stmts, 0: none
	at := make([]stmtOf, len(ws))
	for i, w := range ws {
		gate := ""
		if w.Entry != nil {
			at[i].entry, gate = len(stmts), changedOne
			stmts, args = append(stmts, entryInsert+keepEntry), append(args, entryArgs(w)...)
		}
		if w.Update != nil {
			query, uargs := runUpdate(w, gate)
			at[i].update, gate = len(stmts), changedOne
			stmts, args = append(stmts, query), append(args, uargs...)
		}
		if w.Message != 0 {
			at[i].message = len(stmts)
			stmts = append(stmts, messageDone+and(gate), emptyReply(changedOne))
			args = append(append(args, messageArgs(w)...), w.Message)
		}
	}
	stmts = append(stmts, "COMMIT")
	n, err := s.execBatch(ctx, strings.Join(stmts, ";\n"), args...)
	if err != nil {
		return nil, err
	}
	if len(n) != len(stmts) { // the driver counts every statement; never seen otherwise
		return nil, fmt.Errorf("%d row counts for %d statements", len(n), len(stmts))
	}
	changed := func(k int) bool { return k > 0 && n[k] > 0 }
	var missed []int
	for i, w := range ws {
		if (w.Entry != nil && !changed(at[i].entry)) || (w.Update != nil && !changed(at[i].update)) {
			missed = append(missed, i)
		}
	}
	states := make([]runState, len(ws))
	var stateErr error
	if len(missed) > 0 {
		var st []runState
		if st, stateErr = readRunStates(ctx, s.db, ws, missed); stateErr == nil {
			for k, i := range missed {
				states[i] = st[k]
			}
		}
	}
	out := make([]error, len(ws))
	for i, w := range ws {
		if stateErr != nil && slices.Contains(missed, i) {
			out[i] = wrapErr(fmt.Sprintf("nothing was written for %s; reading why", w.ExecutionID()), stateErr)
			continue
		}
		out[i], _ = judge(w, changed(at[i].entry), changed(at[i].update), changed(at[i].message), states[i])
	}
	return out, nil
}

const insertSignal = `INSERT INTO voltro_workflow_signals (execution_id, name, payload, created_at)
	SELECT id, ?, ?, UTC_TIMESTAMP(6) FROM voltro_workflow_executions WHERE id = ?`

// SendSignal inserts the signal through its run's row (no row: unknown run)
// and the wake only if the signal was inserted. A name that exists stops the
// transaction with a key conflict.
func (s *Store) SendSignal(ctx context.Context, sig store.Signal, wake *store.Message) (bool, error) {
	sigArgs := []any{sig.Name, sig.Payload, sig.ExecutionID}
	notFound := func() error { return errs.New(errs.CodeNotFound, "no workflow execution %q", sig.ExecutionID) }
	if s.batched() {
		stmts, args := []string{insertSignal}, sigArgs
		final := "SELECT ROW_COUNT()"
		if wake != nil {
			mq, margs, _, err := enqueueStmt(wake, nil, "ROW_COUNT() > 0")
			if err != nil {
				return false, err
			}
			stmts, args = append(stmts, mq), append(append([]any{}, args...), margs...)
			final = "SELECT n.c, m.id, m.deliver_at, m.created_at, m.state FROM (SELECT ROW_COUNT() AS c) n " +
				"LEFT JOIN voltro_messages m ON n.c > 0 AND m.id = LAST_INSERT_ID()"
		}
		var n int64
		var sm sentMessage
		err := s.txBatch(ctx, append(stmts, final), args, func(rows *sql.Rows) error {
			dest := []any{&n}
			if wake != nil {
				dest = append(dest, sm.dest()...)
			}
			_, err := scanOne(rows, dest...)
			return err
		})
		switch {
		case err == nil && n == 0:
			return false, notFound()
		case err == nil:
			if wake != nil {
				enqueued(wake, nil, &store.EnqueueResult{}, sm)
			}
			return true, nil
		case !isDuplicate(err):
			return false, wrapErr("send signal", err)
		}
		// the name exists, or the wake's dedupe key does: see below
	}

	stored := false
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		stored = false
		r, err := tx.ExecContext(ctx, insertSignal, sigArgs...)
		if isDuplicate(err) {
			return nil // the first writer won; nothing is written
		}
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound()
		}
		stored = true
		if wake == nil {
			return nil
		}
		mq, margs, _, err := enqueueStmt(wake, nil, "")
		if err != nil {
			return err
		}
		r, err = tx.ExecContext(ctx, mq+keepDuplicate, margs...)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n > 0 {
			var sm sentMessage
			if err := tx.QueryRowContext(ctx, lastMessage).Scan(sm.dest()...); err != nil {
				return err
			}
			enqueued(wake, nil, &store.EnqueueResult{}, sm)
		}
		return nil
	})
	if err != nil {
		return false, wrapErr("send signal", err)
	}
	return stored, nil
}

func (s *Store) GetSignal(ctx context.Context, executionID, name string) (*store.Signal, error) {
	sig := &store.Signal{ExecutionID: executionID, Name: name}
	err := s.db.QueryRowContext(ctx, "SELECT payload, created_at FROM voltro_workflow_signals WHERE execution_id = ? AND name = ?",
		executionID, name).Scan(&sig.Payload, &sig.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("get signal", err)
	}
	return sig, nil
}

const requestCancel = "UPDATE voltro_workflow_executions SET cancel_requested = 1, updated_at = UTC_TIMESTAMP(6) WHERE id = ? AND " + notTerminal

// liveRun is true while the run exists and is not terminal.
const liveRun = "EXISTS (SELECT 1 FROM voltro_workflow_executions WHERE id = ? AND " + notTerminal + ")"

// RequestCancel marks a live run and enqueues the wake under the same
// condition; the UPDATE's row lock keeps the run live until the commit.
func (s *Store) RequestCancel(ctx context.Context, id string, wake *store.Message) (bool, error) {
	if s.batched() {
		stmts, args := []string{requestCancel}, []any{id}
		final := "SELECT status FROM voltro_workflow_executions WHERE id = ?"
		if wake != nil {
			mq, margs, _, err := enqueueStmt(wake, nil, liveRun, id)
			if err != nil {
				return false, err
			}
			stmts, args = append(stmts, mq), append(args, margs...)
			final = "SELECT e.status, m.id, m.deliver_at, m.created_at, m.state FROM voltro_workflow_executions e " +
				"LEFT JOIN voltro_messages m ON m.id = LAST_INSERT_ID() AND e." + notTerminal + " WHERE e.id = ?"
		}
		var status string
		var sm sentMessage
		var found bool
		err := s.txBatch(ctx, append(stmts, final), append(args, id), func(rows *sql.Rows) error {
			dest := []any{&status}
			if wake != nil {
				dest = append(dest, sm.dest()...)
			}
			var err error
			found, err = scanOne(rows, dest...)
			return err
		})
		if err == nil || !isDuplicate(err) {
			return s.cancelled(err, id, found, status, wake, sm)
		}
		// the wake's dedupe key exists: see below
	}
	var status string
	var found bool
	var sm sentMessage
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		found, sm = false, sentMessage{}
		if _, err := tx.ExecContext(ctx, requestCancel, id); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, "SELECT status FROM voltro_workflow_executions WHERE id = ?", id).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if wake == nil || store.ExecStatus(status).Terminal() {
			return nil
		}
		mq, margs, _, err := enqueueStmt(wake, nil, "")
		if err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, mq+keepDuplicate, margs...)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n > 0 {
			return tx.QueryRowContext(ctx, lastMessage).Scan(sm.dest()...)
		}
		return nil
	})
	return s.cancelled(err, id, found, status, wake, sm)
}

// cancelled turns what RequestCancel read into its answer.
func (s *Store) cancelled(err error, id string, found bool, status string, wake *store.Message, sm sentMessage) (bool, error) {
	switch {
	case err != nil:
		return false, wrapErr("request cancel", err)
	case !found:
		return false, errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	case store.ExecStatus(status).Terminal():
		return false, nil
	}
	if wake != nil && sm.id.Valid {
		enqueued(wake, nil, &store.EnqueueResult{}, sm)
	}
	return true, nil
}
