// Workflow runs: executions, their journal and signals (store.Workflows).
// The fenced writes (AppendJournal, UpdateExecution) are one statement on the
// write connection whose EXISTS on voltro_shard_locks is the fence; only when
// it changes nothing does a second read tell fenced from already-exists from
// not-found. The writes that touch several tables (StartExecution,
// SendSignal, RequestCancel) are one BEGIN IMMEDIATE transaction on the
// write connection, their message inserted as Enqueue inserts it.

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// notTerminal is a WHERE condition on voltro_workflow_executions.status.
const notTerminal = `status NOT IN ('` + string(store.ExecCompleted) + `', '` + string(store.ExecFailed) + `', '` + string(store.ExecCancelled) + `')`

// holdsShard is true while the lock row of @shard names @owner at @epoch.
const holdsShard = `EXISTS (SELECT 1 FROM voltro_shard_locks AS l
	WHERE l.shard = @shard AND l.owner = @owner AND l.owner <> '' AND l.epoch = @epoch)`

// execCols is the column list scanExec reads, in order.
const execCols = `id, name, shard, idem_key, status, input, output, error, parent_id, parent_close,
	cancel_requested, waiting_on, runner, created_at, updated_at, finished_at,
	queue, partition_key, priority, start_at, dequeued_at`

// insertExecSQL inserts a run unless its id exists (then no row changes).
// A run on a queue is inserted 'queued' with its place there (see
// queuedStart); any other run has an empty queue and the queue columns at their
// defaults, which keeps it out of the queue indexes.
const insertExecSQL = `INSERT INTO voltro_workflow_executions (` + execCols + `)
	VALUES (@id, @name, @shard, @idem_key, @status, @input, @output, @error, @parent_id, @parent_close,
		@cancel_requested, @waiting_on, @runner, @now, @now, 0,
		@queue, @partition_key, @priority, @start_at, 0)
	ON CONFLICT (id) DO NOTHING`

const getExecSQL = `SELECT ` + execCols + ` FROM voltro_workflow_executions WHERE id = ?`

// upsertStartSQL writes a run's start context, overwriting a leftover row of
// an id that is new again.
const upsertStartSQL = `INSERT INTO "_voltro_workflow_start_contexts"
		("executionId", "subject", "trace", "source", "parentId", "parentClose", "createdAt")
	VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT ("executionId") DO UPDATE SET
		"subject" = excluded."subject", "trace" = excluded."trace", "source" = excluded."source",
		"parentId" = excluded."parentId", "parentClose" = excluded."parentClose", "createdAt" = excluded."createdAt"`

// duplicateSQL reads the message a dedupe key belongs to and its reply, as
// Enqueue's duplicate does.
const duplicateSQL = `SELECT m.id, r.request_id, r.payload, r.error, r.created_at
	FROM voltro_messages AS m LEFT JOIN voltro_replies AS r ON r.request_id = m.id
	WHERE m.dedupe_key = ?`

// appendJournalSQL writes one journal entry while the shard is held; an
// entry at (execution_id, seq) is kept.
const appendJournalSQL = `INSERT INTO voltro_workflow_journal
		(execution_id, seq, kind, name, result, error, attempts, runner, started_at, finished_at)
	SELECT @id, @seq, @kind, @name, @result, @error, @attempts, @runner, @started_at, @finished_at
	WHERE ` + holdsShard + `
	ON CONFLICT (execution_id, seq) DO NOTHING`

// updateExecSQL moves a run that is not finished, while the shard is held.
const updateExecSQL = `UPDATE voltro_workflow_executions SET
		status = @status, waiting_on = @waiting_on, updated_at = @now,
		runner = CASE WHEN @runner <> '' THEN @runner ELSE runner END,
		output = CASE WHEN @terminal THEN @output ELSE output END,
		error = CASE WHEN @terminal THEN @error ELSE error END,
		finished_at = CASE WHEN @terminal THEN @now ELSE finished_at END
	WHERE id = @id AND ` + notTerminal + ` AND ` + holdsShard

// insertSignalSQL stores a signal of an existing run unless one of that name
// exists.
const insertSignalSQL = `INSERT INTO voltro_workflow_signals (execution_id, name, payload, created_at)
	SELECT id, @name, @payload, @now FROM voltro_workflow_executions WHERE id = @id
	ON CONFLICT (execution_id, name) DO NOTHING`

const cancelSQL = `UPDATE voltro_workflow_executions SET cancel_requested = 1 WHERE id = ? AND ` + notTerminal

const execExistsSQL = `SELECT EXISTS (SELECT 1 FROM voltro_workflow_executions WHERE id = ?)`

func scanExec(sc rowScanner) (store.Execution, error) {
	var x store.Execution
	var status string
	var created, updated, finished, startAt, dequeued int64
	if err := sc.Scan(&x.ID, &x.Name, &x.Shard, &x.Key, &status, &x.Input, &x.Output, &x.Error, &x.ParentID, &x.ParentClose,
		&x.CancelRequested, &x.WaitingOn, &x.Runner, &created, &updated, &finished,
		&x.Queue, &x.Partition, &x.Priority, &startAt, &dequeued); err != nil {
		return x, err
	}
	x.Status = store.ExecStatus(status)
	x.CreatedAt, x.UpdatedAt, x.FinishedAt = fromMicros(created), fromMicros(updated), fromMicros(finished)
	x.StartAt, x.DequeuedAt = fromMicros(startAt), fromMicros(dequeued)
	return x, nil
}

func noExecution(id string) error {
	return errs.New(errs.CodeNotFound, "no workflow execution %q", id)
}

// prepW prepares queries on the write connection (cached by prep), before
// a transaction takes that connection.
func (s *Store) prepW(ctx context.Context, queries ...string) error {
	for _, q := range queries {
		if _, err := s.prep(ctx, s.w, q); err != nil {
			return err
		}
	}
	return nil
}

// enqueueArgs are the arguments of enqueueSQL for m, as Enqueue builds them
// at store time t, with the resulting delivery time and claim epoch.
// TODO: Enqueue (messages.go) builds the same arguments inline; it could
// call this.
func enqueueArgs(m *store.Message, claim *store.EnqueueClaim, t int64) (args []any, deliverAt, epoch int64, err error) {
	deliverAt = t
	switch {
	case !m.DeliverAt.IsZero():
		deliverAt = m.DeliverAt.UnixMicro()
	case m.Delay > 0:
		deliverAt = t + durMicros(m.Delay)
	}
	var headers, dedupe any
	if m.Headers != nil {
		b, err := json.Marshal(m.Headers)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("sqlite: encode headers: %w", err)
		}
		headers = string(b)
	}
	if m.DedupeKey != "" {
		dedupe = m.DedupeKey
	}
	wantClaim := claim != nil && deliverAt <= t
	var owner string
	var claimExpires int64
	if wantClaim {
		owner, epoch, claimExpires = claim.Owner, claim.Epoch, t+durMicros(claim.ClaimTTL)
	}
	args = []any{
		sql.Named("shard", m.Shard), sql.Named("entity_type", m.EntityType), sql.Named("entity_id", m.EntityID),
		sql.Named("tag", m.Tag), sql.Named("payload", blob(m.Payload)), sql.Named("headers", headers),
		sql.Named("dedupe_key", dedupe), sql.Named("reply_to", m.ReplyTo), sql.Named("deliver_at", deliverAt),
		sql.Named("want_claim", wantClaim), sql.Named("owner", owner), sql.Named("epoch", epoch),
		sql.Named("claim_expires", claimExpires), sql.Named("now", t),
	}
	return args, deliverAt, epoch, nil
}

// enqueueTx is Enqueue inside tx, at store time t: the same insert (dedupe,
// claim at insert fenced by the lock row) through enqueueSQL and the same
// answer for a duplicate. Callers list enqueueSQL and duplicateSQL in the
// queries inTx prepares.
func (s *Store) enqueueTx(ctx context.Context, tx *sql.Tx, m *store.Message, claim *store.EnqueueClaim, t int64) (store.EnqueueResult, error) {
	args, deliverAt, epoch, err := enqueueArgs(m, claim, t)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	ins, err := s.stmt(ctx, tx, enqueueSQL)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	var id int64
	var state string
	err = ins.QueryRowContext(ctx, args...).Scan(&id, &state)
	if err == sql.ErrNoRows && m.DedupeKey != "" {
		return s.duplicateTx(ctx, tx, m.DedupeKey)
	}
	if err != nil {
		return store.EnqueueResult{}, err
	}
	m.ID, m.DeliverAt, m.State, m.CreatedAt = id, fromMicros(deliverAt), store.MessageState(state), fromMicros(t)
	res := store.EnqueueResult{ID: id}
	if m.State == store.StateClaimed {
		res.ClaimedEpoch = epoch
	}
	return res, nil
}

// duplicateTx is duplicate inside tx.
func (s *Store) duplicateTx(ctx context.Context, tx *sql.Tx, key string) (store.EnqueueResult, error) {
	st, err := s.stmt(ctx, tx, duplicateSQL)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	var id int64
	var rid, created sql.NullInt64
	var payload, rerr []byte
	if err := st.QueryRowContext(ctx, key).Scan(&id, &rid, &payload, &rerr, &created); err != nil {
		return store.EnqueueResult{}, fmt.Errorf("read the duplicate: %w", err)
	}
	res := store.EnqueueResult{ID: id, Duplicate: true}
	if rid.Valid {
		res.Reply = &store.Reply{RequestID: id, Payload: payload, Error: rerr, CreatedAt: fromMicros(created.Int64)}
	}
	return res, nil
}

// inTx runs fn in a BEGIN IMMEDIATE transaction on the write connection and
// commits unless fn fails or asks for a rollback (commit=false: nothing was
// written). queries are prepared before the transaction begins.
func (s *Store) inTx(ctx context.Context, op string, queries []string, fn func(tx *sql.Tx) (commit bool, err error)) error {
	if err := s.prepW(ctx, queries...); err != nil {
		return s.wrap(err, op)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err, op)
	}
	commit, err := fn(tx)
	if err != nil || !commit {
		rerr := tx.Rollback()
		if err != nil {
			return s.wrap(err, op)
		}
		return s.wrap(rerr, op)
	}
	return s.wrap(tx.Commit(), op)
}

// stmt is tx's use of the statement for query: the one prep cached (inTx
// prepares its queries), else one prepared on tx itself. Never prep here:
// preparing on the write pool would wait for the connection tx holds.
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	st := s.stmts[stmtKey{s.w, query}]
	s.mu.Unlock()
	if st == nil {
		return tx.PrepareContext(ctx, query)
	}
	return tx.StmtContext(ctx, st), nil
}

func (s *Store) StartExecution(ctx context.Context, x store.Execution, sc store.StartContext, start *store.Message, claim *store.EnqueueClaim) (store.Execution, bool, store.EnqueueResult, error) {
	var res store.EnqueueResult
	var stored store.Execution
	existing := false
	t := s.now()
	status, place := queuedStart(x)
	if status == store.ExecQueued {
		start = nil // its start message is Dequeue's to enqueue
	}
	queries := []string{insertExecSQL, getExecSQL, upsertStartSQL}
	if start != nil {
		queries = append(queries, enqueueSQL, duplicateSQL)
	}
	err := s.inTx(ctx, "start workflow execution "+x.ID, queries, func(tx *sql.Tx) (bool, error) {
		ins, err := s.stmt(ctx, tx, insertExecSQL)
		if err != nil {
			return false, err
		}
		r, err := ins.ExecContext(ctx, append([]any{
			sql.Named("id", x.ID), sql.Named("name", x.Name), sql.Named("shard", x.Shard), sql.Named("idem_key", x.Key),
			sql.Named("status", string(status)), sql.Named("input", blob(x.Input)), sql.Named("output", blob(x.Output)),
			sql.Named("error", blob(x.Error)), sql.Named("parent_id", x.ParentID), sql.Named("parent_close", x.ParentClose),
			sql.Named("cancel_requested", x.CancelRequested), sql.Named("waiting_on", x.WaitingOn), sql.Named("runner", x.Runner),
			sql.Named("now", t)}, place...)...)
		if err != nil {
			return false, err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return false, err
		}
		if n == 0 {
			get, err := s.stmt(ctx, tx, getExecSQL)
			if err != nil {
				return false, err
			}
			if stored, err = scanExec(get.QueryRowContext(ctx, x.ID)); err != nil {
				return false, fmt.Errorf("read the existing run: %w", err)
			}
			existing = true
			return false, nil // nothing written
		}
		upsert, err := s.stmt(ctx, tx, upsertStartSQL)
		if err != nil {
			return false, err
		}
		if _, err := upsert.ExecContext(ctx, x.ID, sc.Subject, sc.Trace, sc.Source, sc.ParentID, sc.ParentClose, t); err != nil {
			return false, err
		}
		if start != nil {
			if res, err = s.enqueueTx(ctx, tx, start, claim, t); err != nil {
				return false, fmt.Errorf("enqueue the start message: %w", err)
			}
		}
		return true, nil
	})
	if err != nil {
		return store.Execution{}, false, store.EnqueueResult{}, err
	}
	if existing {
		return stored, true, store.EnqueueResult{}, nil
	}
	x = startedAs(x, status)
	x.CreatedAt, x.UpdatedAt, x.FinishedAt = fromMicros(t), fromMicros(t), fromMicros(0)
	return x, false, res, nil
}

func (s *Store) GetExecution(ctx context.Context, id string) (store.Execution, error) {
	x, err := scanExec(s.queryRowR(ctx, getExecSQL, id))
	if err == sql.ErrNoRows {
		return store.Execution{}, noExecution(id)
	}
	if err != nil {
		return store.Execution{}, s.wrap(err, "get workflow execution")
	}
	return x, nil
}

// pollCols is execCols with the input of an unfinished run left out.
var pollCols = strings.Replace(execCols, "input,", "CASE WHEN "+notTerminal+" THEN NULL ELSE input END,", 1)

func (s *Store) PollExecutions(ctx context.Context, ids []string) ([]store.Execution, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, s.wrap(err, "poll workflow executions")
	}
	rows, err := s.queryR(ctx, `SELECT `+pollCols+` FROM voltro_workflow_executions WHERE id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, s.wrap(err, "poll workflow executions")
	}
	defer rows.Close()
	out := make([]store.Execution, 0, len(ids))
	for rows.Next() {
		x, err := scanExec(rows)
		if err != nil {
			return nil, s.wrap(err, "poll workflow executions")
		}
		out = append(out, x)
	}
	return out, s.wrap(rows.Err(), "poll workflow executions")
}

func (s *Store) GetStartContext(ctx context.Context, id string) (store.StartContext, error) {
	sc := store.StartContext{ExecutionID: id}
	err := s.queryRowR(ctx, `SELECT "subject", "trace", "source", "parentId", "parentClose"
		FROM "_voltro_workflow_start_contexts" WHERE "executionId" = ?`, id).
		Scan(&sc.Subject, &sc.Trace, &sc.Source, &sc.ParentID, &sc.ParentClose)
	if err == sql.ErrNoRows {
		return store.StartContext{}, errs.New(errs.CodeNotFound, "no start context for %q", id)
	}
	if err != nil {
		return store.StartContext{}, s.wrap(err, "get workflow start context")
	}
	return sc, nil
}

func (s *Store) ListExecutions(ctx context.Context, f store.ExecutionFilter) ([]store.Execution, error) {
	var where []string
	var args []any
	if f.Status != "" {
		where = append(where, `status = ?`)
		args = append(args, string(f.Status))
	}
	if f.Name != "" {
		where = append(where, `name = ?`)
		args = append(args, f.Name)
	}
	if f.Queue != "" {
		// queue <> '' lets the planner use the partial index of queued runs
		where = append(where, `queue = ? AND queue <> ''`)
		args = append(args, f.Queue)
	}
	if f.ParentID != "" {
		// parent_id <> '' lets the planner use the partial index of children
		where = append(where, `parent_id = ? AND parent_id <> ''`)
		args = append(args, f.ParentID)
	}
	if !f.Since.IsZero() {
		where, args = append(where, `created_at >= ?`), append(args, f.Since.UnixMicro())
	}
	if !f.Until.IsZero() {
		where, args = append(where, `created_at < ?`), append(args, f.Until.UnixMicro())
	}
	if c := f.After; c != nil {
		// ties of created_at are broken by rowid, as the listing orders
		where = append(where, `created_at <= ? AND (created_at < ? OR rowid < COALESCE((SELECT rowid FROM voltro_workflow_executions WHERE id = ?), 0))`)
		us := c.CreatedAt.UnixMicro()
		args = append(args, us, us, c.ID)
	}
	q := `SELECT ` + execCols + ` FROM voltro_workflow_executions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created_at DESC, rowid DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(err, "list workflow executions")
	}
	defer rows.Close()
	var out []store.Execution
	for rows.Next() {
		x, err := scanExec(rows)
		if err != nil {
			return nil, s.wrap(err, "list workflow executions")
		}
		out = append(out, x)
	}
	return out, s.wrap(rows.Err(), "list workflow executions")
}

func (s *Store) Journal(ctx context.Context, id string) ([]store.JournalEntry, error) {
	st, err := s.prep(ctx, s.r, `SELECT seq, kind, name, result, error, attempts, runner, started_at, finished_at
		FROM voltro_workflow_journal WHERE execution_id = ? ORDER BY seq`)
	if err != nil {
		return nil, s.wrap(err, "read workflow journal")
	}
	rows, err := st.QueryContext(ctx, id)
	if err != nil {
		return nil, s.wrap(err, "read workflow journal")
	}
	defer rows.Close()
	var out []store.JournalEntry
	for rows.Next() {
		e := store.JournalEntry{ExecutionID: id}
		var kind string
		var started, finished int64
		if err := rows.Scan(&e.Seq, &kind, &e.Name, &e.Result, &e.Error, &e.Attempts, &e.Runner, &started, &finished); err != nil {
			return nil, s.wrap(err, "read workflow journal")
		}
		e.Kind = store.JournalKind(kind)
		e.StartedAt, e.FinishedAt = fromMicros(started), fromMicros(finished)
		out = append(out, e)
	}
	return out, s.wrap(rows.Err(), "read workflow journal")
}

func (s *Store) SendSignal(ctx context.Context, sig store.Signal, wake *store.Message) (bool, error) {
	stored := false
	t := s.now()
	queries := []string{insertSignalSQL, execExistsSQL}
	if wake != nil {
		queries = append(queries, enqueueSQL, duplicateSQL)
	}
	err := s.inTx(ctx, "send workflow signal "+sig.Name+" to "+sig.ExecutionID, queries, func(tx *sql.Tx) (bool, error) {
		ins, err := s.stmt(ctx, tx, insertSignalSQL)
		if err != nil {
			return false, err
		}
		r, err := ins.ExecContext(ctx, sql.Named("id", sig.ExecutionID), sql.Named("name", sig.Name),
			sql.Named("payload", blob(sig.Payload)), sql.Named("now", t))
		if err != nil {
			return false, err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, s.execMissing(ctx, tx, sig.ExecutionID)
		}
		if wake != nil {
			if _, err := s.enqueueTx(ctx, tx, wake, nil, t); err != nil {
				return false, fmt.Errorf("enqueue the wake: %w", err)
			}
		}
		stored = true
		return true, nil
	})
	return stored, err
}

// execMissing is errs.ErrNotFound if run id does not exist, nil if it does.
func (s *Store) execMissing(ctx context.Context, tx *sql.Tx, id string) error {
	st, err := s.stmt(ctx, tx, execExistsSQL)
	if err != nil {
		return err
	}
	var ok bool
	if err := st.QueryRowContext(ctx, id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return noExecution(id)
	}
	return nil
}

func (s *Store) GetSignal(ctx context.Context, executionID, name string) (*store.Signal, error) {
	sig := store.Signal{ExecutionID: executionID, Name: name}
	var created int64
	err := s.queryRowR(ctx, `SELECT payload, created_at FROM voltro_workflow_signals WHERE execution_id = ? AND name = ?`,
		executionID, name).Scan(&sig.Payload, &created)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, s.wrap(err, "get workflow signal")
	}
	sig.CreatedAt = fromMicros(created)
	return &sig, nil
}

func (s *Store) ListSignals(ctx context.Context, executionID string) ([]store.Signal, error) {
	rows, err := s.queryR(ctx, `SELECT name, payload, created_at FROM voltro_workflow_signals WHERE execution_id = ? ORDER BY created_at, name`, executionID)
	if err != nil {
		return nil, s.wrap(err, "list workflow signals")
	}
	defer rows.Close()
	var out []store.Signal
	for rows.Next() {
		sig := store.Signal{ExecutionID: executionID}
		var created int64
		if err := rows.Scan(&sig.Name, &sig.Payload, &created); err != nil {
			return nil, s.wrap(err, "list workflow signals")
		}
		sig.CreatedAt = fromMicros(created)
		out = append(out, sig)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err, "list workflow signals")
	}
	return out, nil
}

func (s *Store) RequestCancel(ctx context.Context, id string, wake *store.Message) (bool, error) {
	marked := false
	t := s.now()
	queries := []string{cancelSQL, execExistsSQL}
	if wake != nil {
		queries = append(queries, enqueueSQL, duplicateSQL)
	}
	err := s.inTx(ctx, "request cancel of workflow execution "+id, queries, func(tx *sql.Tx) (bool, error) {
		upd, err := s.stmt(ctx, tx, cancelSQL)
		if err != nil {
			return false, err
		}
		r, err := upd.ExecContext(ctx, id)
		if err != nil {
			return false, err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, s.execMissing(ctx, tx, id) // finished already, or unknown
		}
		if wake != nil {
			if _, err := s.enqueueTx(ctx, tx, wake, nil, t); err != nil {
				return false, fmt.Errorf("enqueue the wake: %w", err)
			}
		}
		marked = true
		return true, nil
	})
	return marked, err
}
