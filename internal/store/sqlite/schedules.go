// Schedules (store.Schedules) in _voltro_schedule_claims,
// _voltro_schedule_runs and _voltro_schedules (migration 0400). Unlike the
// store's own tables, these keep times as UTC text, 'YYYY-MM-DD
// HH:MM:SS.mmm' (the shape the scheduler gave them before the migration
// existed): the store formats its clock's reading (now) and the caller's
// instants alike, so comparisons stay text comparisons of one clock.

package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// schedTime is the text form of a time in the schedule tables.
const schedTime = "2006-01-02 15:04:05.000"

// schedText formats t for the schedule tables.
func schedText(t time.Time) string { return t.UTC().Format(schedTime) }

// schedNow is the store's clock in schedule-table form.
func (s *Store) schedNow() string { return schedText(fromMicros(s.now())) }

// parseSchedTime reads a schedule-table time; NULL is the zero time.
func parseSchedTime(v sql.NullString) (time.Time, error) {
	if !v.Valid {
		return time.Time{}, nil
	}
	t, err := time.Parse("2006-01-02 15:04:05.999999999", v.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: schedule time %q: %w", v.String, err)
	}
	return t, nil
}

func nullText(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func (s *Store) ClaimScheduleTick(ctx context.Context, c store.ScheduleClaim) (bool, error) {
	res, err := s.execW(ctx, `INSERT INTO "_voltro_schedule_claims" ("claimKey", "schedule", "scheduledAt", "replicaId", "claimedAt")
		VALUES (?, ?, ?, ?, ?) ON CONFLICT ("claimKey") DO NOTHING`,
		c.Key(), c.Schedule, schedText(c.ScheduledAt), c.ReplicaID, s.schedNow())
	if err != nil {
		return false, s.wrap(err, "schedule claim "+c.Key())
	}
	n, err := res.RowsAffected()
	return n == 1, s.wrap(err, "schedule claim "+c.Key())
}

func (s *Store) CountScheduleClaims(ctx context.Context, schedule string) (int64, error) {
	var n int64
	err := s.queryRowR(ctx, `SELECT COUNT(*) FROM "_voltro_schedule_claims" WHERE "schedule" = ?`, schedule).Scan(&n)
	return n, s.wrap(err, "count schedule claims "+schedule)
}

const schedDefColumns = `"name", "spec", "timeZone", "coordination", "overlap", "catchUp", "replicaId", "updatedAt"`

func (s *Store) DefineSchedule(ctx context.Context, d store.ScheduleDefinition) error {
	_, err := s.execW(ctx, `INSERT INTO "_voltro_schedules" (`+schedDefColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT ("name") DO UPDATE SET "spec" = excluded."spec", "timeZone" = excluded."timeZone",
			"coordination" = excluded."coordination", "overlap" = excluded."overlap", "catchUp" = excluded."catchUp",
			"replicaId" = excluded."replicaId", "updatedAt" = excluded."updatedAt"`,
		d.Name, d.Spec, d.TimeZone, string(d.Coordination), string(d.Overlap), d.CatchUp, d.ReplicaID, s.schedNow())
	return s.wrap(err, "define schedule "+d.Name)
}

func (s *Store) InsertScheduleRun(ctx context.Context, r store.ScheduleRun) (int64, error) {
	t := s.schedNow()
	var started, finished sql.NullString
	if r.Status != store.ScheduleQueued {
		started = nullText(t)
	}
	if !r.Status.Live() {
		finished = nullText(t)
	}
	res, err := s.execW(ctx, `INSERT INTO "_voltro_schedule_runs"
		("schedule", "scheduledAt", "replicaId", "coordinationOutcome", "status", "started", "finished", "error", "heartbeatAt")
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Schedule, schedText(r.ScheduledAt), r.ReplicaID, string(r.Outcome), string(r.Status), started, finished, nullText(r.Error), t)
	op := "record schedule run " + store.ScheduleClaimKey(r.Schedule, r.ScheduledAt)
	if err != nil {
		return 0, s.wrap(err, op)
	}
	id, err := res.LastInsertId()
	return id, s.wrap(err, op)
}

func (s *Store) StartScheduleRun(ctx context.Context, id int64) (bool, error) {
	t := s.schedNow()
	res, err := s.execW(ctx, `UPDATE "_voltro_schedule_runs" SET "status" = 'running', "started" = ?, "heartbeatAt" = ?
		WHERE "id" = ? AND "status" = 'queued'`, t, t, id)
	op := fmt.Sprintf("start schedule run %d", id)
	if err != nil {
		return false, s.wrap(err, op)
	}
	n, err := res.RowsAffected()
	return n == 1, s.wrap(err, op)
}

func (s *Store) FinishScheduleRun(ctx context.Context, id int64, status store.ScheduleStatus, errText string) error {
	_, err := s.execW(ctx, `UPDATE "_voltro_schedule_runs" SET "status" = ?, "finished" = ?, "error" = ? WHERE "id" = ?`,
		string(status), s.schedNow(), nullText(errText), id)
	return s.wrap(err, fmt.Sprintf("finish schedule run %d", id))
}

func (s *Store) HeartbeatScheduleRuns(ctx context.Context, replicaID string) error {
	_, err := s.execW(ctx, `UPDATE "_voltro_schedule_runs" SET "heartbeatAt" = ?
		WHERE "status" IN ('running', 'queued') AND "replicaId" = ?`, s.schedNow(), replicaID)
	return s.wrap(err, "heartbeat schedule runs")
}

func (s *Store) ActiveScheduleRuns(ctx context.Context, schedule string, since time.Time) (store.ScheduleActivity, error) {
	op := "schedule activity " + schedule
	rows, err := s.queryR(ctx, `SELECT "status", COUNT(*) FROM "_voltro_schedule_runs"
		WHERE "schedule" = ? AND "status" IN ('running', 'queued') AND "heartbeatAt" > ?
		GROUP BY "status"`, schedule, schedText(since))
	if err != nil {
		return store.ScheduleActivity{}, s.wrap(err, op)
	}
	defer rows.Close()
	var a store.ScheduleActivity
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return store.ScheduleActivity{}, s.wrap(err, op)
		}
		switch store.ScheduleStatus(st) {
		case store.ScheduleRunning:
			a.Running = n
		case store.ScheduleQueued:
			a.Queued = n
		}
	}
	return a, s.wrap(rows.Err(), op)
}

func (s *Store) LastScheduledAt(ctx context.Context, schedule string, notAfter time.Time) (time.Time, bool, error) {
	var v sql.NullString
	err := s.queryRowR(ctx, `SELECT MAX("scheduledAt") FROM "_voltro_schedule_runs"
		WHERE "schedule" = ? AND "scheduledAt" <= ?`, schedule, schedText(notAfter)).Scan(&v)
	if err != nil {
		return time.Time{}, false, s.wrap(err, "last schedule tick "+schedule)
	}
	t, err := parseSchedTime(v)
	return t, v.Valid, err
}

const schedRunColumns = `"id", "schedule", "scheduledAt", "replicaId", "coordinationOutcome", "status", "started", "finished", "error"`

func scanSchedRun(sc rowScanner) (store.ScheduleRun, error) {
	var r store.ScheduleRun
	var at, started, finished, errText sql.NullString
	var outcome, status string
	if err := sc.Scan(&r.ID, &r.Schedule, &at, &r.ReplicaID, &outcome, &status, &started, &finished, &errText); err != nil {
		return store.ScheduleRun{}, err
	}
	r.Outcome, r.Status, r.Error = store.ScheduleOutcome(outcome), store.ScheduleStatus(status), errText.String
	var err error
	if r.ScheduledAt, err = parseSchedTime(at); err != nil {
		return store.ScheduleRun{}, err
	}
	if r.Started, err = parseSchedTime(started); err != nil {
		return store.ScheduleRun{}, err
	}
	if r.Finished, err = parseSchedTime(finished); err != nil {
		return store.ScheduleRun{}, err
	}
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
		limit = -1 // no limit
	}
	op := "schedule runs " + schedule
	rows, err := s.queryR(ctx, `SELECT `+schedRunColumns+` FROM "_voltro_schedule_runs"
		WHERE "schedule" = ? ORDER BY "scheduledAt" DESC, "id" DESC LIMIT ?`, schedule, limit)
	if err != nil {
		return nil, s.wrap(err, op)
	}
	out, err := scanSchedRuns(rows)
	return out, s.wrap(err, op)
}

func (s *Store) LatestScheduleRuns(ctx context.Context, perSchedule int) (map[string][]store.ScheduleRun, error) {
	const op = "latest schedule runs"
	rows, err := s.queryR(ctx, `SELECT `+schedRunColumns+` FROM (SELECT `+schedRunColumns+`,
		row_number() OVER (PARTITION BY "schedule" ORDER BY "scheduledAt" DESC, "id" DESC) AS "rank"
		FROM "_voltro_schedule_runs") AS r WHERE "rank" <= ? ORDER BY "schedule", "scheduledAt" DESC, "id" DESC`, perSchedule)
	if err != nil {
		return nil, s.wrap(err, op)
	}
	out, err := scanSchedRuns(rows)
	return store.BySchedule(out), s.wrap(err, op)
}

func (s *Store) ScheduleSummaries(ctx context.Context) ([]store.ScheduleSummary, error) {
	sums := store.ScheduleSummaries{}
	if err := s.scheduleDefinitions(ctx, sums); err != nil {
		return nil, s.wrap(err, "schedule definitions")
	}
	if err := s.scheduleCounts(ctx, sums); err != nil {
		return nil, s.wrap(err, "schedule counts")
	}
	// every schedule's latest deciding run in one query, not one per schedule
	rows, err := s.queryR(ctx, `SELECT `+schedRunColumns+` FROM (SELECT `+schedRunColumns+`,
		row_number() OVER (PARTITION BY "schedule" ORDER BY "scheduledAt" DESC, "id" DESC) AS "rank"
		FROM "_voltro_schedule_runs" WHERE "coordinationOutcome" <> 'lostLock') AS r WHERE "rank" = 1`)
	if err != nil {
		return nil, s.wrap(err, "last schedule runs")
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanSchedRun(rows)
		if err != nil {
			return nil, s.wrap(err, "last schedule runs")
		}
		sums.Get(r.Schedule).Last = &r
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err, "last schedule runs")
	}
	return sums.Sorted(), nil
}

func (s *Store) scheduleDefinitions(ctx context.Context, sums store.ScheduleSummaries) error {
	rows, err := s.queryR(ctx, `SELECT `+schedDefColumns+` FROM "_voltro_schedules"`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var d store.ScheduleDefinition
		var coord, overlap string
		var at sql.NullString
		if err := rows.Scan(&d.Name, &d.Spec, &d.TimeZone, &coord, &overlap, &d.CatchUp, &d.ReplicaID, &at); err != nil {
			return err
		}
		d.Coordination, d.Overlap = store.ScheduleCoordination(coord), store.ScheduleOverlap(overlap)
		if d.UpdatedAt, err = parseSchedTime(at); err != nil {
			return err
		}
		sums.Get(d.Name).Definition = &d
	}
	return rows.Err()
}

func (s *Store) scheduleCounts(ctx context.Context, sums store.ScheduleSummaries) error {
	rows, err := s.queryR(ctx, `SELECT "schedule", "coordinationOutcome", COUNT(*) FROM "_voltro_schedule_runs"
		GROUP BY "schedule", "coordinationOutcome"`)
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
	t := s.schedNow()
	steps := []struct {
		n      *int64
		before time.Time
		q      string
		args   []any
	}{
		{&out.Claims, gc.ClaimsBefore, `DELETE FROM "_voltro_schedule_claims" WHERE "claimedAt" < ?`, nil},
		{&out.Abandoned, gc.StaleBefore, `UPDATE "_voltro_schedule_runs" SET "status" = 'abandoned', "finished" = ?, "error" = ?
			WHERE "status" IN ('running', 'queued') AND "heartbeatAt" < ?`, []any{t, store.ScheduleAbandonedError}},
		{&out.Runs, gc.RunsBefore, `DELETE FROM "_voltro_schedule_runs" WHERE "status" NOT IN ('running', 'queued') AND "finished" < ?`, nil},
	}
	for _, st := range steps {
		if st.before.IsZero() {
			continue
		}
		res, err := s.execW(ctx, st.q, append(st.args, schedText(st.before))...)
		if err != nil {
			return out, s.wrap(err, "collect schedules")
		}
		if *st.n, err = res.RowsAffected(); err != nil {
			return out, s.wrap(err, "collect schedules")
		}
	}
	return out, nil
}
