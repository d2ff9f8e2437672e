// Starting workflow runs: StartExecution and the batched StartExecutions,
// each writing the run, its start context and its start message in one
// transaction. A run started on a queue is written queued, without a start
// message: Dequeue sends it when the run gets its slot (queues.go).

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// readStarted reads back, after a start's inserts, the run's timestamps and
// the start message the session inserted last (args: the run's id).
const readStarted = `SELECT e.created_at, e.updated_at, m.id, m.deliver_at, m.created_at, m.state
	FROM voltro_workflow_executions e LEFT JOIN voltro_messages m ON m.id = LAST_INSERT_ID() WHERE e.id = ?`

// startArgs are insertExec's and upsertStartContext's arguments for a start.
func startArgs(x store.Execution, sc store.StartContext) (execArgs, scArgs []any) {
	var queue any
	if x.Queue != "" {
		queue = x.Queue
	}
	return []any{x.ID, x.Name, x.Shard, x.Key, string(x.Status), x.Input, x.Output, x.Error,
			x.ParentID, x.ParentClose, x.CancelRequested, x.WaitingOn, x.Runner,
			queue, x.Partition, x.Priority, nullTime(x.StartAt)},
		[]any{x.ID, sc.Subject, sc.Trace, sc.Source, sc.ParentID, sc.ParentClose}
}

// started is x as a start stores it: queued when it is on a queue, running
// otherwise, not finished nor dequeued.
func started(x store.Execution) store.Execution {
	x.Status = store.ExecRunning
	if x.Queue != "" {
		x.Status = store.ExecQueued
	}
	x.FinishedAt, x.DequeuedAt = time.Time{}, time.Time{}
	return x
}

// startMessage is the message a start of x enqueues: none for a run on a
// queue, whatever the caller passed (its start is Dequeue's to send, when
// the run gets a slot; sent now, the run would run without one).
func startMessage(x store.Execution, m *store.Message) *store.Message {
	if x.Queue != "" {
		return nil
	}
	return m
}

func (s *Store) StartExecution(ctx context.Context, x store.Execution, sc store.StartContext, start *store.Message, claim *store.EnqueueClaim) (store.Execution, bool, store.EnqueueResult, error) {
	var res store.EnqueueResult
	x = started(x)
	start = startMessage(x, start)
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

	if start != nil && x.ID != "" && !s.batched() && s.returning() {
		// A batch of one: RETURNING hands back what the inserts wrote,
		// a round trip fewer than startTx's read afterwards (the
		// sequential path on Galera, and the holder of a routed start).
		// A run or start message that exists fails it whole, writing
		// nothing; startTx then sorts out which.
		out, err := s.startsTx(ctx, []store.StartRequest{{Exec: x, Context: sc, Message: start, Claim: claim}})
		if err == nil {
			return out[0].Stored, false, out[0].Result, nil
		}
		if !isDuplicate(err) {
			return store.Execution{}, false, res, err
		}
	}
	return s.startTx(ctx, x, execArgs, scArgs, start, claim, mq, margs, dkey)
}

// startTx is StartExecution as an ordinary transaction: where there is no
// batch pool or the server is a Galera node and either the server has no
// RETURNING or a batch of one met a key conflict, and after a batched
// start's key conflict that was not the execution's id.
func (s *Store) startTx(ctx context.Context, x store.Execution, execArgs, scArgs []any, start *store.Message, claim *store.EnqueueClaim, mq string, margs []any, dkey any) (store.Execution, bool, store.EnqueueResult, error) {
	var res store.EnqueueResult
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

// StartExecutions writes a batch of starts as one transaction: as one
// multi-statement round trip where the pool batches (see batched), as an
// ordinary transaction on Galera (startsTx), where one write-set then
// commits or aborts the whole batch; one start at a time otherwise. A run
// or start message that exists fails the batch as a whole (the caller then
// starts them one by one, which sorts out which).
func (s *Store) StartExecutions(ctx context.Context, reqs []store.StartRequest) ([]store.StartOutcome, error) {
	out := make([]store.StartOutcome, len(reqs))
	if !s.batched() && s.server.galera {
		return s.startsTx(ctx, reqs)
	}
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
		x := started(q.Exec)
		m := startMessage(x, q.Message)
		if err := checkStart(i, x, m); err != nil {
			return nil, err
		}
		execArgs, scArgs := startArgs(x, q.Context)
		stmts = append(stmts, insertExec, upsertStartContext)
		args = append(append(args, execArgs...), scArgs...)
		if m == nil {
			stmts, args = append(stmts, readQueued), append(args, x.ID)
			continue
		}
		mq, margs, _, err := enqueueStmt(m, q.Claim, "")
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, mq, readStarted)
		args = append(append(args, margs...), x.ID)
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
		o.Stored = started(q.Exec)
		o.Stored.CreatedAt, o.Stored.UpdatedAt = created, updated
		if m := startMessage(q.Exec, q.Message); m != nil {
			enqueued(m, q.Claim, &o.Result, sms[i])
		}
	}
	return out, nil
}

// readQueued is readStarted for a start without a message: its message
// columns read NULL (LAST_INSERT_ID would name an earlier start's message).
const readQueued = "SELECT created_at, updated_at, NULL, NULL, NULL, NULL FROM voltro_workflow_executions WHERE id = ?"

// checkStart refuses start i of a batch, x with start message m, when it
// has no id, or no message and is not on a queue.
func checkStart(i int, x store.Execution, m *store.Message) error {
	if x.ID == "" || (m == nil && x.Queue == "") {
		return errs.New(errs.CodeInvalidArgument, "start %d of the batch has no id or no start message", i)
	}
	return nil
}

// startsTx writes a batch of starts in one ordinary transaction: the runs
// and their start contexts as one multi-row INSERT each, then each start
// message and its LAST_INSERT_ID, then the runs' timestamps in one read;
// 5 + two per start round trips and one commit for the batch. Where the
// server has RETURNING (MariaDB 10.5+), startsReturning does it in 4.
func (s *Store) startsTx(ctx context.Context, reqs []store.StartRequest) ([]store.StartOutcome, error) {
	out := make([]store.StartOutcome, len(reqs))
	var execArgs, scArgs []any
	ids := make([]any, len(reqs))
	mqs := make([]string, len(reqs))
	margs := make([][]any, len(reqs))
	for i, q := range reqs {
		x := started(q.Exec)
		m := startMessage(x, q.Message)
		if err := checkStart(i, x, m); err != nil {
			return nil, err
		}
		if m != nil && !s.returning() { // with RETURNING, returningMessages builds them below
			var err error
			if mqs[i], margs[i], _, err = enqueueStmt(m, q.Claim, ""); err != nil {
				return nil, err
			}
		}
		ea, sa := startArgs(x, q.Context)
		execArgs, scArgs, ids[i] = append(execArgs, ea...), append(scArgs, sa...), x.ID
	}
	// The messages' statement is built once, before the transaction: a
	// retry (after a Galera certification failure) must not build it from
	// messages that a failed try already filled in (their deliver_at).
	var rq string
	var rargs []any
	if s.returning() {
		var err error
		if rq, rargs, err = returningMessages(reqs); err != nil {
			return nil, err
		}
	}
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		if s.returning() {
			return startsReturning(ctx, tx, reqs, execArgs, scArgs, rq, rargs, out)
		}
		if _, err := tx.ExecContext(ctx, multiRow(insertExec, len(reqs)), execArgs...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, multiRow(upsertStartContext, len(reqs)), scArgs...); err != nil {
			return err
		}
		for i := range reqs {
			if mqs[i] == "" { // on a queue: no start message
				continue
			}
			var sm sentMessage
			if _, err := tx.ExecContext(ctx, mqs[i], margs[i]...); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, lastMessage).Scan(sm.dest()...); err != nil {
				return err
			}
			enqueued(reqs[i].Message, reqs[i].Claim, &out[i].Result, sm)
		}
		rows, err := tx.QueryContext(ctx, "SELECT id, created_at, updated_at FROM voltro_workflow_executions WHERE id IN ("+placeholders(len(ids))+")", ids...)
		if err != nil {
			return err
		}
		defer rows.Close()
		at := make(map[string][2]time.Time, len(reqs))
		for rows.Next() {
			var id string
			var c, u time.Time
			if err := rows.Scan(&id, &c, &u); err != nil {
				return err
			}
			at[id] = [2]time.Time{c, u}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for i, q := range reqs {
			t, ok := at[q.Exec.ID]
			if !ok {
				return fmt.Errorf("start batch: run %s is not there", q.Exec.ID)
			}
			o := &out[i]
			o.Stored = started(q.Exec)
			o.Stored.CreatedAt, o.Stored.UpdatedAt = t[0], t[1]
		}
		return nil
	})
	if err != nil {
		return nil, wrapErr("start executions", err)
	}
	return out, nil
}

// multiRow repeats the one VALUES tuple of stmt n times.
func multiRow(stmt string, n int) string {
	i := strings.Index(stmt, "VALUES (") + len("VALUES ")
	depth, j := 0, i
	for ; j < len(stmt); j++ {
		if stmt[j] == '(' {
			depth++
		} else if stmt[j] == ')' {
			if depth--; depth == 0 {
				break
			}
		}
	}
	tuple := stmt[i : j+1]
	return stmt[:i] + strings.Repeat(tuple+", ", n-1) + tuple + stmt[j+1:]
}

// startsReturning is startsTx's transaction on a server with RETURNING:
// the runs (returning their timestamps), their start contexts and their
// start messages (returning what the server assigned) as one multi-row
// INSERT each, whatever the batch's size. Each message is the SELECT its
// one-row INSERT would run, all joined with UNION ALL (mq and margs, from
// returningMessages).
func startsReturning(ctx context.Context, tx *sql.Tx, reqs []store.StartRequest, execArgs, scArgs []any, mq string, margs []any, out []store.StartOutcome) error {
	at := make(map[string][2]time.Time, len(reqs))
	err := scanRows(ctx, tx, multiRow(insertExec, len(reqs))+" RETURNING id, created_at, updated_at", execArgs, func(rows *sql.Rows) error {
		var id string
		var c, u time.Time
		err := rows.Scan(&id, &c, &u)
		at[id] = [2]time.Time{c, u}
		return err
	})
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, multiRow(upsertStartContext, len(reqs)), scArgs...); err != nil {
		return err
	}
	sent := make(map[string]sentMessage, len(reqs))
	if mq != "" { // "": every run of the batch is on a queue
		err = scanRows(ctx, tx, mq, margs, func(rows *sql.Rows) error {
			var id string
			var sm sentMessage
			err := rows.Scan(append([]any{&id}, sm.dest()...)...)
			sent[id] = sm
			return err
		})
		if err != nil {
			return err
		}
	}
	for i, q := range reqs {
		t, ok := at[q.Exec.ID]
		m := startMessage(q.Exec, q.Message)
		var sm sentMessage
		sok := m == nil // a run on a queue has none
		if m != nil {
			sm, sok = sent[m.EntityID]
		}
		if !ok || !sok {
			return fmt.Errorf("start batch: run %s or its start message is not there", q.Exec.ID)
		}
		o := &out[i]
		if m != nil {
			enqueued(m, q.Claim, &o.Result, sm)
		}
		o.Stored = started(q.Exec)
		o.Stored.CreatedAt, o.Stored.UpdatedAt = t[0], t[1]
	}
	return nil
}

// returningMessages is the start messages of reqs as one INSERT …
// SELECT … UNION ALL … RETURNING (startsReturning's third statement), ""
// when no run of reqs has one (all are on a queue).
func returningMessages(reqs []store.StartRequest) (string, []any, error) {
	const head = "INSERT INTO voltro_messages (" + insertCols + ")\n\t"
	sels := make([]string, 0, len(reqs))
	var margs []any
	for i, q := range reqs {
		m := startMessage(q.Exec, q.Message)
		if m == nil {
			continue
		}
		where := ""
		if q.Claim == nil {
			where = "TRUE" // enqueueWhere: enqueuePlain as a SELECT
		}
		mq, args, _, err := enqueueStmt(m, q.Claim, where)
		if err != nil {
			return "", nil, err
		}
		sel, ok := strings.CutPrefix(mq, head)
		if !ok {
			return "", nil, fmt.Errorf("start batch: message statement %d is not an INSERT … SELECT", i)
		}
		sels, margs = append(sels, sel), append(margs, args...)
	}
	if len(sels) == 0 {
		return "", nil, nil
	}
	return head + strings.Join(sels, "\nUNION ALL ") + " RETURNING entity_id, id, deliver_at, created_at, state", margs, nil
}

// scanRows runs query in tx and calls scan for each of its rows.
func scanRows(ctx context.Context, tx *sql.Tx, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
