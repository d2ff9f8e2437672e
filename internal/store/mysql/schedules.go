// Schedules (store.Schedules) in _voltro_schedule_claims,
// _voltro_schedule_runs and _voltro_schedules (migration 0400): one
// autocommit statement per call on the application pool, every write
// through the store's retry (a deadlock, a Galera certification conflict
// or a lock wait timeout rolled the statement back whole), stamped with
// the server's UTC_TIMESTAMP(3).

package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// schedTime is how an instant of the caller is bound to a DATETIME(3)
// column: UTC, cut (not rounded) to the millisecond, as the server would
// store it.
func schedTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

func nullText(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func (s *Store) ClaimScheduleTick(ctx context.Context, c store.ScheduleClaim) (bool, error) {
	_, err := s.exec(ctx, "INSERT INTO `_voltro_schedule_claims` (`claimKey`, `schedule`, `scheduledAt`, `replicaId`, `claimedAt`)"+
		" VALUES (?, ?, ?, ?, UTC_TIMESTAMP(3))", c.Key(), c.Schedule, schedTime(c.ScheduledAt), c.ReplicaID)
	switch {
	case err == nil:
		return true, nil
	case isDuplicate(err): // another replica claimed the tick first
		return false, nil
	}
	return false, wrapErr("schedule claim "+c.Key(), err)
}

func (s *Store) CountScheduleClaims(ctx context.Context, schedule string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `_voltro_schedule_claims` WHERE `schedule` = ?", schedule).Scan(&n)
	return n, wrapErr("count schedule claims "+schedule, err)
}

const schedDefColumns = "`name`, `spec`, `timeZone`, `coordination`, `overlap`, `catchUp`, `replicaId`, `updatedAt`"

func (s *Store) DefineSchedule(ctx context.Context, d store.ScheduleDefinition) error {
	_, err := s.exec(ctx, "INSERT INTO `_voltro_schedules` ("+schedDefColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3))"+
		" ON DUPLICATE KEY UPDATE `spec` = VALUES(`spec`), `timeZone` = VALUES(`timeZone`),"+
		" `coordination` = VALUES(`coordination`), `overlap` = VALUES(`overlap`), `catchUp` = VALUES(`catchUp`),"+
		" `replicaId` = VALUES(`replicaId`), `updatedAt` = VALUES(`updatedAt`)",
		d.Name, d.Spec, d.TimeZone, string(d.Coordination), string(d.Overlap), d.CatchUp, d.ReplicaID)
	return wrapErr("define schedule "+d.Name, err)
}

func (s *Store) InsertScheduleRun(ctx context.Context, r store.ScheduleRun) (int64, error) {
	started, finished := "UTC_TIMESTAMP(3)", "NULL"
	if r.Status == store.ScheduleQueued {
		started = "NULL"
	}
	if !r.Status.Live() {
		finished = "UTC_TIMESTAMP(3)"
	}
	op := "record schedule run " + store.ScheduleClaimKey(r.Schedule, r.ScheduledAt)
	res, err := s.exec(ctx, "INSERT INTO `_voltro_schedule_runs`"+
		" (`schedule`, `scheduledAt`, `replicaId`, `coordinationOutcome`, `status`, `started`, `finished`, `error`, `heartbeatAt`)"+
		" VALUES (?, ?, ?, ?, ?, "+started+", "+finished+", ?, UTC_TIMESTAMP(3))",
		r.Schedule, schedTime(r.ScheduledAt), r.ReplicaID, string(r.Outcome), string(r.Status), nullText(r.Error))
	if err != nil {
		return 0, wrapErr(op, err)
	}
	id, err := res.LastInsertId()
	return id, wrapErr(op, err)
}

func (s *Store) StartScheduleRun(ctx context.Context, id int64) (bool, error) {
	op := fmt.Sprintf("start schedule run %d", id)
	res, err := s.exec(ctx, "UPDATE `_voltro_schedule_runs` SET `status` = 'running', `started` = UTC_TIMESTAMP(3), `heartbeatAt` = UTC_TIMESTAMP(3)"+
		" WHERE `id` = ? AND `status` = 'queued'", id)
	if err != nil {
		return false, wrapErr(op, err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrapErr(op, err)
}

func (s *Store) FinishScheduleRun(ctx context.Context, id int64, status store.ScheduleStatus, errText string) error {
	_, err := s.exec(ctx, "UPDATE `_voltro_schedule_runs` SET `status` = ?, `finished` = UTC_TIMESTAMP(3), `error` = ? WHERE `id` = ?",
		string(status), nullText(errText), id)
	return wrapErr(fmt.Sprintf("finish schedule run %d", id), err)
}

func (s *Store) HeartbeatScheduleRuns(ctx context.Context, replicaID string) error {
	_, err := s.exec(ctx, "UPDATE `_voltro_schedule_runs` SET `heartbeatAt` = UTC_TIMESTAMP(3)"+
		" WHERE `status` IN ('running', 'queued') AND `replicaId` = ?", replicaID)
	return wrapErr("heartbeat schedule runs", err)
}

func (s *Store) ActiveScheduleRuns(ctx context.Context, schedule string, since time.Time) (store.ScheduleActivity, error) {
	op := "schedule activity " + schedule
	rows, err := s.db.QueryContext(ctx, "SELECT `status`, COUNT(*) FROM `_voltro_schedule_runs`"+
		" WHERE `schedule` = ? AND `status` IN ('running', 'queued') AND `heartbeatAt` > ? GROUP BY `status`",
		schedule, schedTime(since))
	if err != nil {
		return store.ScheduleActivity{}, wrapErr(op, err)
	}
	defer rows.Close()
	var a store.ScheduleActivity
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return store.ScheduleActivity{}, wrapErr(op, err)
		}
		switch store.ScheduleStatus(st) {
		case store.ScheduleRunning:
			a.Running = n
		case store.ScheduleQueued:
			a.Queued = n
		}
	}
	return a, wrapErr(op, rows.Err())
}

func (s *Store) LastScheduledAt(ctx context.Context, schedule string, notAfter time.Time) (time.Time, bool, error) {
	var t sql.NullTime
	err := s.db.QueryRowContext(ctx, "SELECT MAX(`scheduledAt`) FROM `_voltro_schedule_runs` WHERE `schedule` = ? AND `scheduledAt` <= ?",
		schedule, schedTime(notAfter)).Scan(&t)
	if err != nil {
		return time.Time{}, false, wrapErr("last schedule tick "+schedule, err)
	}
	return timeOf(t), t.Valid, nil
}

const schedRunColumns = "`id`, `schedule`, `scheduledAt`, `replicaId`, `coordinationOutcome`, `status`, `started`, `finished`, `error`"

func scanSchedRun(sc interface{ Scan(...any) error }) (store.ScheduleRun, error) {
	var r store.ScheduleRun
	var outcome, status string
	var started, finished sql.NullTime
	var errText sql.NullString
	if err := sc.Scan(&r.ID, &r.Schedule, &r.ScheduledAt, &r.ReplicaID, &outcome, &status, &started, &finished, &errText); err != nil {
		return store.ScheduleRun{}, err
	}
	r.Outcome, r.Status = store.ScheduleOutcome(outcome), store.ScheduleStatus(status)
	r.Started, r.Finished, r.Error = timeOf(started), timeOf(finished), errText.String
	return r, nil
}

// scanSchedRuns reads every row of rows as a schedule run and closes rows.
func scanSchedRuns(rows *sql.Rows) ([]store.ScheduleRun, error) {
	defer rows.Close()
	var out []store.ScheduleRun
	for rows.Next() {
		r, err := scanSchedRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *Store) ScheduleRuns(ctx context.Context, schedule string, limit int) ([]store.ScheduleRun, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	op := "schedule runs " + schedule
	rows, err := s.db.QueryContext(ctx, "SELECT "+schedRunColumns+" FROM `_voltro_schedule_runs`"+
		" WHERE `schedule` = ? ORDER BY `scheduledAt` DESC, `id` DESC LIMIT ?", schedule, limit)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	out, err := scanSchedRuns(rows)
	return out, wrapErr(op, err)
}

func (s *Store) LatestScheduleRuns(ctx context.Context, perSchedule int) (map[string][]store.ScheduleRun, error) {
	const op = "latest schedule runs"
	rows, err := s.db.QueryContext(ctx, "SELECT "+schedRunColumns+" FROM (SELECT "+schedRunColumns+","+
		" ROW_NUMBER() OVER (PARTITION BY `schedule` ORDER BY `scheduledAt` DESC, `id` DESC) AS `rank`"+
		" FROM `_voltro_schedule_runs`) AS r WHERE `rank` <= ? ORDER BY `schedule`, `scheduledAt` DESC, `id` DESC", perSchedule)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	out, err := scanSchedRuns(rows)
	return store.BySchedule(out), wrapErr(op, err)
}

func (s *Store) ScheduleSummaries(ctx context.Context) ([]store.ScheduleSummary, error) {
	sums := store.ScheduleSummaries{}
	if err := s.scheduleDefinitions(ctx, sums); err != nil {
		return nil, wrapErr("schedule definitions", err)
	}
	if err := s.scheduleCounts(ctx, sums); err != nil {
		return nil, wrapErr("schedule counts", err)
	}
	// every schedule's latest deciding run in one query, not one per schedule
	rows, err := s.db.QueryContext(ctx, "SELECT "+schedRunColumns+" FROM (SELECT "+schedRunColumns+","+
		" ROW_NUMBER() OVER (PARTITION BY `schedule` ORDER BY `scheduledAt` DESC, `id` DESC) AS `rank`"+
		" FROM `_voltro_schedule_runs` WHERE `coordinationOutcome` <> 'lostLock') AS r WHERE `rank` = 1")
	if err != nil {
		return nil, wrapErr("last schedule runs", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanSchedRun(rows)
		if err != nil {
			return nil, wrapErr("last schedule runs", err)
		}
		sums.Get(r.Schedule).Last = &r
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("last schedule runs", err)
	}
	return sums.Sorted(), nil
}

func (s *Store) scheduleDefinitions(ctx context.Context, sums store.ScheduleSummaries) error {
	rows, err := s.db.QueryContext(ctx, "SELECT "+schedDefColumns+" FROM `_voltro_schedules`")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var d store.ScheduleDefinition
		var coord, overlap string
		if err := rows.Scan(&d.Name, &d.Spec, &d.TimeZone, &coord, &overlap, &d.CatchUp, &d.ReplicaID, &d.UpdatedAt); err != nil {
			return err
		}
		d.Coordination, d.Overlap = store.ScheduleCoordination(coord), store.ScheduleOverlap(overlap)
		sums.Get(d.Name).Definition = &d
	}
	return rows.Err()
}

func (s *Store) scheduleCounts(ctx context.Context, sums store.ScheduleSummaries) error {
	rows, err := s.db.QueryContext(ctx, "SELECT `schedule`, `coordinationOutcome`, COUNT(*) FROM `_voltro_schedule_runs`"+
		" GROUP BY `schedule`, `coordinationOutcome`")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, outcome string
		var n int64
		if err := rows.Scan(&name, &outcome, &n); err != nil {
			return err
		}
		sums.Get(name).Counts[store.ScheduleOutcome(outcome)] = n
	}
	return rows.Err()
}

func (s *Store) CollectSchedules(ctx context.Context, gc store.ScheduleGC) (store.ScheduleGCResult, error) {
	var out store.ScheduleGCResult
	steps := []struct {
		n      *int64
		before time.Time
		q      string
		args   []any
	}{
		{&out.Claims, gc.ClaimsBefore, "DELETE FROM `_voltro_schedule_claims` WHERE `claimedAt` < ?", nil},
		{&out.Abandoned, gc.StaleBefore, "UPDATE `_voltro_schedule_runs` SET `status` = 'abandoned', `finished` = UTC_TIMESTAMP(3), `error` = ?" +
			" WHERE `status` IN ('running', 'queued') AND `heartbeatAt` < ?", []any{store.ScheduleAbandonedError}},
		{&out.Runs, gc.RunsBefore, "DELETE FROM `_voltro_schedule_runs` WHERE `status` NOT IN ('running', 'queued') AND `finished` < ?", nil},
	}
	for _, st := range steps {
		if st.before.IsZero() {
			continue
		}
		res, err := s.exec(ctx, st.q, append(st.args, schedTime(st.before))...)
		if err != nil {
			return out, wrapErr("collect schedules", err)
		}
		if *st.n, err = res.RowsAffected(); err != nil {
			return out, wrapErr("collect schedules", err)
		}
	}
	return out, nil
}
