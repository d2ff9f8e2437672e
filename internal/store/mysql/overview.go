// Overviews (store.Overview): schedule activity and workflow run counts
// for `voltro cluster status`, read on the application pool.

package mysql

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/store"
)

const errNoSuchTable = 1146

// noSuchTable reports the server's "table doesn't exist" (1146).
func noSuchTable(err error) bool { return serverErrno(err) == errNoSuchTable }

func (s *Store) ScheduleOverview(ctx context.Context, since time.Time) (*store.ScheduleOverview, error) {
	o := &store.ScheduleOverview{}
	var err error
	if o.Active, err = s.replicaRuns(ctx, "SELECT `replicaId`, COUNT(*) FROM `_voltro_schedule_runs`"+
		" WHERE `heartbeatAt` > ? OR `finished` > ? GROUP BY `replicaId` ORDER BY `replicaId`", schedTime(since), schedTime(since)); err != nil {
		return nil, overviewErr("active replicas", err)
	}
	if o.Running, err = s.replicaRuns(ctx, "SELECT `replicaId`, COUNT(*) FROM `_voltro_schedule_runs`"+
		" WHERE `status` = 'running' GROUP BY `replicaId` ORDER BY `replicaId`"); err != nil {
		return nil, overviewErr("running runs", err)
	}
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `_voltro_schedule_claims` WHERE `claimedAt` > ?", schedTime(since)).Scan(&o.RecentClaims); err != nil {
		return nil, overviewErr("recent claims", err)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT c.`schedule`, c.`replicaId`, c.`claimedAt`"+
		" FROM `_voltro_schedule_claims` c"+
		" JOIN (SELECT `schedule`, MAX(`claimedAt`) AS m FROM `_voltro_schedule_claims` GROUP BY `schedule`) x"+
		"   ON x.`schedule` = c.`schedule` AND x.m = c.`claimedAt`"+
		" ORDER BY c.`schedule`, c.`replicaId`")
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
	if noSuchTable(err) {
		return nil
	}
	return wrapErr("schedule overview: "+op, err)
}

func (s *Store) replicaRuns(ctx context.Context, q string, args ...any) ([]store.ReplicaRuns, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
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
	for _, st := range statuses {
		out[st] = 0
	}
	rows, err := s.db.QueryContext(ctx, "SELECT `status`, COUNT(*) FROM `voltro_workflow_executions` WHERE `status` IN ("+
		placeholders(len(statuses))+") GROUP BY `status`", anys(statuses)...)
	if err != nil {
		if noSuchTable(err) {
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
		return nil, wrapErr("count executions", err)
	}
	return out, nil
}
