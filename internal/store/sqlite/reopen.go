// Reopening a failed or cancelled run (store.Workflows), in one write
// transaction.

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func (s *Store) ReopenExecution(ctx context.Context, id string, from []store.ExecStatus, truncate int, wake *store.Message) (store.ExecStatus, bool, error) {
	var found store.ExecStatus
	var missing bool
	var res store.EnqueueResult
	t := s.now()
	err := s.inTx(ctx, "reopen workflow execution "+id, nil, func(tx *sql.Tx) (bool, error) {
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM voltro_workflow_executions WHERE id = ?`, id).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			missing = true
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if found = store.ExecStatus(status); !slices.Contains(from, found) {
			return false, nil
		}
		if truncate >= 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM voltro_workflow_journal WHERE execution_id = ? AND seq >= ?`, id, truncate); err != nil {
				return false, err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE voltro_workflow_executions SET status = 'running', output = NULL, error = NULL,
			finished_at = 0, cancel_requested = 0, waiting_on = '', updated_at = ? WHERE id = ?`, t, id); err != nil {
			return false, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE voltro_messages SET dedupe_key = NULL
			WHERE entity_type = ? AND entity_id = ? AND state IN ('processed', 'dead') AND dedupe_key IS NOT NULL`, wake.EntityType, id); err != nil {
			return false, err
		}
		res, err = s.enqueueIn(ctx, tx, wake, t)
		return err == nil, err
	})
	switch {
	case err != nil:
		return found, false, err
	case missing:
		return "", false, errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	}
	return found, res.ID != 0, nil
}
