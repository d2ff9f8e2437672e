// Signals and cancel requests of workflow runs: SendSignal, GetSignal and
// RequestCancel, each with the wake it enqueues in the same transaction.

package mysql

import (
	"context"
	"database/sql"
	"errors"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

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

func (s *Store) ListSignals(ctx context.Context, executionID string) ([]store.Signal, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name, payload, created_at FROM voltro_workflow_signals WHERE execution_id = ? ORDER BY created_at, name", executionID)
	if err != nil {
		return nil, wrapErr("list signals", err)
	}
	defer rows.Close()
	var out []store.Signal
	for rows.Next() {
		sig := store.Signal{ExecutionID: executionID}
		if err := rows.Scan(&sig.Name, &sig.Payload, &sig.CreatedAt); err != nil {
			return nil, wrapErr("list signals", err)
		}
		out = append(out, sig)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("list signals", err)
	}
	return out, nil
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
