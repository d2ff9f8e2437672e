// Reopening a failed or cancelled run (store.Workflows), in one
// transaction that locks the run's row.

package postgres

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func (s *Store) ReopenExecution(ctx context.Context, id string, from []store.ExecStatus, truncate int, wake *store.Message) (store.ExecStatus, bool, error) {
	args, _, err := s.enqueueArgs(wake, nil)
	if err != nil {
		return "", false, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", false, wrapErr("reopen execution", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var status string
	err = tx.QueryRow(ctx, `SELECT status FROM voltro_workflow_executions WHERE id = $1 FOR UPDATE`, id).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	}
	if err != nil {
		return "", false, wrapErr("reopen execution", err)
	}
	found := store.ExecStatus(status)
	if !slices.Contains(from, found) {
		return found, false, nil
	}
	if truncate >= 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM voltro_workflow_journal WHERE execution_id = $1 AND seq >= $2`, id, truncate); err != nil {
			return found, false, wrapErr("reopen execution: cut the journal", err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE voltro_workflow_executions SET status = 'running', output = NULL, error = NULL,
		finished_at = NULL, cancel_requested = false, waiting_on = '', updated_at = now() WHERE id = $1`, id); err != nil {
		return found, false, wrapErr("reopen execution", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE voltro_messages SET dedupe_key = NULL
		WHERE entity_type = $1 AND entity_id = $2 AND state IN ('processed', 'dead') AND dedupe_key IS NOT NULL`, wake.EntityType, id); err != nil {
		return found, false, wrapErr("reopen execution: free the dedupe keys", err)
	}
	var (
		mid         int64
		state       string
		epoch       int64
		at, created any
		notified    *int64
	)
	if err := tx.QueryRow(ctx, sqlEnqueue, args...).Scan(&mid, &at, &state, &created, &epoch, &notified); err != nil {
		return found, false, wrapErr("reopen execution: enqueue the wake-up", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return found, false, wrapErr("reopen execution", err)
	}
	wake.ID, wake.State = mid, store.MessageState(state)
	return found, true, nil
}
