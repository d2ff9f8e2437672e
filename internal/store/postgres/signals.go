// A run's signals, all of them, for the dashboard's run page.

package postgres

import (
	"context"

	"github.com/voltro/voltro/internal/store"
)

func (s *Store) ListSignals(ctx context.Context, id string) ([]store.Signal, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, payload, created_at FROM voltro_workflow_signals WHERE execution_id = $1 ORDER BY created_at, name`, id)
	if err != nil {
		return nil, wrapErr("list signals", err)
	}
	defer rows.Close()
	var out []store.Signal
	for rows.Next() {
		sig := store.Signal{ExecutionID: id}
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
