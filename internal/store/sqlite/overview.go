// Overviews (store.Overview): schedule activity and workflow run counts
// for `voltro cluster status`, read on the read pool. The schedule tables
// keep times as UTC text (schedules.go): the cut-off is formatted the same
// way, so comparisons stay text comparisons.

package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// noSuchTable reports SQLite's "no such table" (a plain SQLITE_ERROR,
// told apart by its message), from the statement's prepare or its run.
func noSuchTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table")
}

func (s *Store) ScheduleOverview(ctx context.Context, since time.Time) (*store.ScheduleOverview, error) {
	o := &store.ScheduleOverview{}
	cut := schedText(since)
	var err error
	if o.Active, err = s.replicaRuns(ctx, `SELECT "replicaId", COUNT(*) FROM "_voltro_schedule_runs"
		WHERE "heartbeatAt" > ? OR "finished" > ? GROUP BY "replicaId" ORDER BY "replicaId"`, cut, cut); err != nil {
		return nil, s.overviewErr("active replicas", err)
	}
	if o.Running, err = s.replicaRuns(ctx, `SELECT "replicaId", COUNT(*) FROM "_voltro_schedule_runs"
		WHERE "status" = 'running' GROUP BY "replicaId" ORDER BY "replicaId"`); err != nil {
		return nil, s.overviewErr("running runs", err)
	}
	if err := s.queryRowR(ctx, `SELECT COUNT(*) FROM "_voltro_schedule_claims" WHERE "claimedAt" > ?`, cut).Scan(&o.RecentClaims); err != nil {
		return nil, s.overviewErr("recent claims", err)
	}
	rows, err := s.queryR(ctx, `SELECT c."schedule", c."replicaId", c."claimedAt"
		FROM "_voltro_schedule_claims" c
		JOIN (SELECT "schedule", MAX("claimedAt") AS m FROM "_voltro_schedule_claims" GROUP BY "schedule") x
		  ON x."schedule" = c."schedule" AND x.m = c."claimedAt"
		ORDER BY c."schedule", c."replicaId"`)
	if err != nil {
		return nil, s.overviewErr("latest claims", err)
	}
	defer rows.Close()
	var all []store.LatestClaim
	for rows.Next() {
		var c store.LatestClaim
		var at sql.NullString
		if err := rows.Scan(&c.Schedule, &c.ReplicaID, &at); err != nil {
			return nil, s.overviewErr("latest claims", err)
		}
		if c.ClaimedAt, err = parseSchedTime(at); err != nil {
			return nil, s.overviewErr("latest claims", err)
		}
		all = append(all, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.overviewErr("latest claims", err)
	}
	o.Latest = store.LatestClaims(all)
	return o, nil
}

// overviewErr is nil, with a nil overview, where the tables do not exist.
func (s *Store) overviewErr(op string, err error) error {
	if noSuchTable(err) {
		return nil
	}
	return s.wrap(err, "schedule overview: "+op)
}

func (s *Store) replicaRuns(ctx context.Context, q string, args ...any) ([]store.ReplicaRuns, error) {
	rows, err := s.queryR(ctx, q, args...)
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
	if len(statuses) == 0 {
		return out, nil
	}
	args := make([]any, len(statuses))
	for i, st := range statuses {
		out[st], args[i] = 0, string(st)
	}
	rows, err := s.queryR(ctx, `SELECT status, COUNT(*) FROM voltro_workflow_executions WHERE status IN (?`+
		strings.Repeat(", ?", len(statuses)-1)+`) GROUP BY status`, args...)
	if err != nil {
		if noSuchTable(err) {
			return nil, nil
		}
		return nil, s.wrap(err, "count executions")
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, s.wrap(err, "count executions")
		}
		out[store.ExecStatus(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err, "count executions")
	}
	return out, nil
}
