// Schedules (store.Schedules) in _voltro_schedule_claims,
// _voltro_schedule_runs and _voltro_schedules (migration 0400): one
// autocommit statement per call on the application pool, stamped with the
// server's now().

package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store"
)

// nullText is s, or NULL when s is empty.
func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Store) ClaimScheduleTick(ctx context.Context, c store.ScheduleClaim) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO "_voltro_schedule_claims" ("claimKey", "schedule", "scheduledAt", "replicaId", "claimedAt")
		VALUES ($1, $2, $3, $4, now()) ON CONFLICT ("claimKey") DO NOTHING`,
		c.Key(), c.Schedule, c.ScheduledAt.UTC(), c.ReplicaID)
	if err != nil {
		return false, wrapErr("schedule claim "+c.Key(), err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Store) CountScheduleClaims(ctx context.Context, schedule string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM "_voltro_schedule_claims" WHERE "schedule" = $1`, schedule).Scan(&n)
	return n, wrapErr("count schedule claims "+schedule, err)
}

const schedDefColumns = `"name", "spec", "timeZone", "coordination", "overlap", "catchUp", "replicaId", "updatedAt"`

func (s *Store) DefineSchedule(ctx context.Context, d store.ScheduleDefinition) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO "_voltro_schedules" (`+schedDefColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, now())
		ON CONFLICT ("name") DO UPDATE SET "spec" = excluded."spec", "timeZone" = excluded."timeZone",
			"coordination" = excluded."coordination", "overlap" = excluded."overlap", "catchUp" = excluded."catchUp",
			"replicaId" = excluded."replicaId", "updatedAt" = excluded."updatedAt"`,
		d.Name, d.Spec, d.TimeZone, string(d.Coordination), string(d.Overlap), d.CatchUp, d.ReplicaID)
	return wrapErr("define schedule "+d.Name, err)
}

func (s *Store) InsertScheduleRun(ctx context.Context, r store.ScheduleRun) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO "_voltro_schedule_runs"
		("schedule", "scheduledAt", "replicaId", "coordinationOutcome", "status", "started", "finished", "error", "heartbeatAt")
		VALUES ($1, $2, $3, $4, $5, CASE WHEN $6 THEN now() END, CASE WHEN $7 THEN now() END, $8, now())
		RETURNING "id"`,
		r.Schedule, r.ScheduledAt.UTC(), r.ReplicaID, string(r.Outcome), string(r.Status),
		r.Status != store.ScheduleQueued, !r.Status.Live(), nullText(r.Error)).Scan(&id)
	return id, wrapErr("record schedule run "+store.ScheduleClaimKey(r.Schedule, r.ScheduledAt), err)
}

func (s *Store) StartScheduleRun(ctx context.Context, id int64) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE "_voltro_schedule_runs" SET "status" = 'running', "started" = now(), "heartbeatAt" = now()
		WHERE "id" = $1 AND "status" = 'queued'`, id)
	if err != nil {
		return false, wrapErr(fmt.Sprintf("start schedule run %d", id), err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Store) FinishScheduleRun(ctx context.Context, id int64, status store.ScheduleStatus, errText string) error {
	_, err := s.pool.Exec(ctx, `UPDATE "_voltro_schedule_runs" SET "status" = $1, "finished" = now(), "error" = $2 WHERE "id" = $3`,
		string(status), nullText(errText), id)
	return wrapErr(fmt.Sprintf("finish schedule run %d", id), err)
}

func (s *Store) HeartbeatScheduleRuns(ctx context.Context, replicaID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE "_voltro_schedule_runs" SET "heartbeatAt" = now()
		WHERE "status" IN ('running', 'queued') AND "replicaId" = $1`, replicaID)
	return wrapErr("heartbeat schedule runs", err)
}

func (s *Store) ActiveScheduleRuns(ctx context.Context, schedule string, since time.Time) (store.ScheduleActivity, error) {
	var a store.ScheduleActivity
	err := s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE "status" = 'running'), count(*) FILTER (WHERE "status" = 'queued')
		FROM "_voltro_schedule_runs"
		WHERE "schedule" = $1 AND "status" IN ('running', 'queued') AND "heartbeatAt" > $2`,
		schedule, since.UTC()).Scan(&a.Running, &a.Queued)
	return a, wrapErr("schedule activity "+schedule, err)
}

func (s *Store) LastScheduledAt(ctx context.Context, schedule string, notAfter time.Time) (time.Time, bool, error) {
	var t *time.Time
	err := s.pool.QueryRow(ctx, `SELECT max("scheduledAt") FROM "_voltro_schedule_runs"
		WHERE "schedule" = $1 AND "scheduledAt" <= $2`, schedule, notAfter.UTC()).Scan(&t)
	if err != nil || t == nil {
		return time.Time{}, false, wrapErr("last schedule tick "+schedule, err)
	}
	return *t, true, nil
}

const schedRunColumns = `"id", "schedule", "scheduledAt", "replicaId", "coordinationOutcome", "status", "started", "finished", "error"`

func scanSchedRun(row pgx.Row) (store.ScheduleRun, error) {
	var r store.ScheduleRun
	var outcome, status string
	var started, finished *time.Time
	var errText *string
	if err := row.Scan(&r.ID, &r.Schedule, &r.ScheduledAt, &r.ReplicaID, &outcome, &status, &started, &finished, &errText); err != nil {
		return store.ScheduleRun{}, err
	}
	r.Outcome, r.Status = store.ScheduleOutcome(outcome), store.ScheduleStatus(status)
	if started != nil {
		r.Started = *started
	}
	if finished != nil {
		r.Finished = *finished
	}
	if errText != nil {
		r.Error = *errText
	}
	return r, nil
}

func (s *Store) ScheduleRuns(ctx context.Context, schedule string, limit int) ([]store.ScheduleRun, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+schedRunColumns+` FROM "_voltro_schedule_runs"
		WHERE "schedule" = $1 ORDER BY "scheduledAt" DESC, "id" DESC LIMIT $2`, schedule, lim)
	if err != nil {
		return nil, wrapErr("schedule runs "+schedule, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ScheduleRun, error) { return scanSchedRun(row) })
	return out, wrapErr("schedule runs "+schedule, err)
}

func (s *Store) LatestScheduleRuns(ctx context.Context, perSchedule int) (map[string][]store.ScheduleRun, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+schedRunColumns+` FROM (SELECT `+schedRunColumns+`,
		row_number() OVER (PARTITION BY "schedule" ORDER BY "scheduledAt" DESC, "id" DESC) AS "rank"
		FROM "_voltro_schedule_runs") AS r WHERE "rank" <= $1 ORDER BY "schedule", "scheduledAt" DESC, "id" DESC`, perSchedule)
	if err != nil {
		return nil, wrapErr("latest schedule runs", err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ScheduleRun, error) { return scanSchedRun(row) })
	if err != nil {
		return nil, wrapErr("latest schedule runs", err)
	}
	return store.BySchedule(runs), nil
}

func (s *Store) ScheduleSummaries(ctx context.Context) ([]store.ScheduleSummary, error) {
	sums := store.ScheduleSummaries{}
	rows, err := s.pool.Query(ctx, `SELECT `+schedDefColumns+` FROM "_voltro_schedules"`)
	if err != nil {
		return nil, wrapErr("schedule definitions", err)
	}
	defs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ScheduleDefinition, error) {
		var d store.ScheduleDefinition
		var coord, overlap string
		err := row.Scan(&d.Name, &d.Spec, &d.TimeZone, &coord, &overlap, &d.CatchUp, &d.ReplicaID, &d.UpdatedAt)
		d.Coordination, d.Overlap = store.ScheduleCoordination(coord), store.ScheduleOverlap(overlap)
		return d, err
	})
	if err != nil {
		return nil, wrapErr("schedule definitions", err)
	}
	for _, d := range defs {
		sums.Get(d.Name).Definition = &d
	}
	rows, err = s.pool.Query(ctx, `SELECT "schedule", "coordinationOutcome", count(*) FROM "_voltro_schedule_runs"
		GROUP BY "schedule", "coordinationOutcome"`)
	if err != nil {
		return nil, wrapErr("schedule counts", err)
	}
	var name, outcome string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&name, &outcome, &n}, func() error {
		sums.Get(name).Counts[store.ScheduleOutcome(outcome)] = n
		return nil
	})
	if err != nil {
		return nil, wrapErr("schedule counts", err)
	}
	for name, sm := range sums {
		r, err := scanSchedRun(s.pool.QueryRow(ctx, `SELECT `+schedRunColumns+` FROM "_voltro_schedule_runs"
			WHERE "schedule" = $1 AND "coordinationOutcome" <> 'lostLock' ORDER BY "scheduledAt" DESC, "id" DESC LIMIT 1`, name))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, wrapErr("last schedule run "+name, err)
		default:
			sm.Last = &r
		}
	}
	return sums.Sorted(), nil
}

func (s *Store) CollectSchedules(ctx context.Context, gc store.ScheduleGC) (store.ScheduleGCResult, error) {
	var out store.ScheduleGCResult
	steps := []struct {
		n      *int64
		before time.Time
		q      string
		args   []any
	}{
		{&out.Claims, gc.ClaimsBefore, `DELETE FROM "_voltro_schedule_claims" WHERE "claimedAt" < $1`, nil},
		{&out.Abandoned, gc.StaleBefore, `UPDATE "_voltro_schedule_runs" SET "status" = 'abandoned', "finished" = now(), "error" = $2
			WHERE "status" IN ('running', 'queued') AND "heartbeatAt" < $1`, []any{store.ScheduleAbandonedError}},
		{&out.Runs, gc.RunsBefore, `DELETE FROM "_voltro_schedule_runs" WHERE "status" NOT IN ('running', 'queued') AND "finished" < $1`, nil},
	}
	for _, st := range steps {
		if st.before.IsZero() {
			continue
		}
		tag, err := s.pool.Exec(ctx, st.q, append([]any{st.before.UTC()}, st.args...)...)
		if err != nil {
			return out, wrapErr("collect schedules", err)
		}
		*st.n = tag.RowsAffected()
	}
	return out, nil
}
