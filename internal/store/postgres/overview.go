// Overviews (store.Overview): schedule activity and workflow run counts
// for `voltro cluster status`, read on the application pool.

package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/voltro/voltro/internal/store"
)

// undefinedTable reports PostgreSQL's "relation does not exist" (42P01).
func undefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}

func (s *Store) ScheduleOverview(ctx context.Context, since time.Time) (*store.ScheduleOverview, error) {
	o := &store.ScheduleOverview{}
	var err error
	if o.Active, err = s.replicaRuns(ctx, `SELECT "replicaId", count(*) FROM "_voltro_schedule_runs"
		WHERE "heartbeatAt" > $1 OR "finished" > $1 GROUP BY "replicaId" ORDER BY "replicaId"`, since.UTC()); err != nil {
		return nil, overviewErr("active replicas", err)
	}
	if o.Running, err = s.replicaRuns(ctx, `SELECT "replicaId", count(*) FROM "_voltro_schedule_runs"
		WHERE "status" = 'running' GROUP BY "replicaId" ORDER BY "replicaId"`); err != nil {
		return nil, overviewErr("running runs", err)
	}
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM "_voltro_schedule_claims" WHERE "claimedAt" > $1`, since.UTC()).Scan(&o.RecentClaims); err != nil {
		return nil, overviewErr("recent claims", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT c."schedule", c."replicaId", c."claimedAt"
		FROM "_voltro_schedule_claims" c
		JOIN (SELECT "schedule", max("claimedAt") AS m FROM "_voltro_schedule_claims" GROUP BY "schedule") x
		  ON x."schedule" = c."schedule" AND x.m = c."claimedAt"
		ORDER BY c."schedule", c."replicaId"`)
	if err != nil {
		return nil, overviewErr("latest claims", err)
	}
	defer rows.Close()
	var all []store.LatestClaim
	for rows.Next() {
		var c store.LatestClaim
		if err := rows.Scan(&c.Schedule, &c.ReplicaID, &c.ClaimedAt); err != nil {
			return nil, overviewErr("latest claims", err)
		}
		all = append(all, c)
	}
	if err := rows.Err(); err != nil {
		return nil, overviewErr("latest claims", err)
	}
	o.Latest = store.LatestClaims(all)
	return o, nil
}

// overviewErr is nil, with a nil overview, where the tables do not exist.
func overviewErr(op string, err error) error {
	if undefinedTable(err) {
		return nil
	}
	return wrapErr("schedule overview: "+op, err)
}

func (s *Store) replicaRuns(ctx context.Context, q string, args ...any) ([]store.ReplicaRuns, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.ReplicaRuns{}
	for rows.Next() {
		var r store.ReplicaRuns
		if err := rows.Scan(&r.ReplicaID, &r.Runs); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *Store) CountExecutions(ctx context.Context, statuses ...store.ExecStatus) (map[store.ExecStatus]int, error) {
	out := make(map[store.ExecStatus]int, len(statuses))
	names := make([]string, len(statuses))
	for i, st := range statuses {
		out[st], names[i] = 0, string(st)
	}
	rows, err := s.pool.Query(ctx, `SELECT status, count(*) FROM voltro_workflow_executions WHERE status = ANY($1) GROUP BY status`, names)
	if err != nil {
		if undefinedTable(err) {
			return nil, nil
		}
		return nil, wrapErr("count executions", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, wrapErr("count executions", err)
		}
		out[store.ExecStatus(st)] = n
	}
	if err := rows.Err(); err != nil {
		if undefinedTable(err) {
			return nil, nil
		}
		return nil, wrapErr("count executions", err)
	}
	return out, nil
}
