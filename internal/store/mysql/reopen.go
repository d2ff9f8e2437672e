// Reopening a failed or cancelled run (store.Workflows), in one
// transaction that locks the run's row.

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// errNotReopened stops the transaction of a run in another status.
var errNotReopened = errors.New("not reopened")

func (s *Store) ReopenExecution(ctx context.Context, id string, from []store.ExecStatus, truncate int, wake *store.Message) (store.ExecStatus, bool, error) {
	query, args, _, err := enqueueStmt(wake, nil, "")
	if err != nil {
		return "", false, err
	}
	var found store.ExecStatus
	var mid int64
	err = s.inTx(ctx, nil, func(tx *sql.Tx) error {
		var status string
		if err := tx.QueryRowContext(ctx, `SELECT status FROM voltro_workflow_executions WHERE id = ? FOR UPDATE`, id).Scan(&status); err != nil {
			return err
		}
		if found = store.ExecStatus(status); !slices.Contains(from, found) {
			return errNotReopened
		}
		if truncate >= 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM voltro_workflow_journal WHERE execution_id = ? AND seq >= ?`, id, truncate); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE voltro_workflow_executions SET status = 'running', output = NULL, error = NULL,
			finished_at = NULL, cancel_requested = false, waiting_on = '', updated_at = UTC_TIMESTAMP(6) WHERE id = ?`, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE voltro_messages SET dedupe_key = NULL, dedupe_full = NULL
			WHERE entity_type = ? AND entity_id = ? AND state IN ('processed', 'dead') AND dedupe_key IS NOT NULL`, wake.EntityType, id); err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		mid, err = r.LastInsertId()
		return err
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	case errors.Is(err, errNotReopened):
		return found, false, nil
	case err != nil:
		return found, false, wrapErr("reopen execution", err)
	}
	wake.ID, wake.State = mid, store.StatePending
	return found, true, nil
}
