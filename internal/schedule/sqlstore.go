// The Store over database/sql for PostgreSQL, MariaDB/MySQL and SQLite.
package schedule

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// SQLStore keeps schedules in _voltro_schedule_claims, _voltro_schedule_runs
// and _voltro_schedules on the app's database.
type SQLStore struct {
	db    *sql.DB
	d     dialect
	owned bool // Close closes db
}

// NewSQLStore uses db, which speaks dialect; the caller keeps owning db.
func NewSQLStore(db *sql.DB, d store.Dialect) (*SQLStore, error) {
	dl, ok := dialectFor(d)
	if !ok {
		return nil, errs.New(errs.CodeInvalidConfig, "schedule store: dialect %q has no SQL tables (use NewMemoryStore)", d)
	}
	return &SQLStore{db: db, d: dl}, nil
}

// DB is the handle the store uses.
func (s *SQLStore) DB() *sql.DB { return s.db }

// Close closes the database if OpenURL opened it.
func (s *SQLStore) Close() error {
	if s.owned {
		return s.db.Close()
	}
	return nil
}

func (s *SQLStore) Dialect() store.Dialect { return s.d.name }

// exec runs one autocommit statement. On MariaDB/MySQL a deadlock (1213,
// also Galera's certification failure) or a lock wait timeout (1205) rolled
// the statement back whole, so it is run again, a few times, with jitter.
func (s *SQLStore) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	for attempt := 1; ; attempt++ {
		res, err := s.db.ExecContext(ctx, s.d.sql(q), args...)
		var me *mysql.MySQLError
		if err == nil || attempt >= 5 || !errors.As(err, &me) || (me.Number != 1213 && me.Number != 1205) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(attempt*5+rand.IntN(10)) * time.Millisecond):
		}
	}
}

// initLockKey serialises concurrent Inits on PostgreSQL, where two racing
// CREATE TABLE IF NOT EXISTS can both try to create the row type.
const initLockKey = 0x766f6c74726f5343

func (s *SQLStore) Init(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = s.init(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("schedule store init: %w", ctx.Err())
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return errs.Wrap(errs.CodeUnavailable, err, "schedule store: create tables")
}

func (s *SQLStore) init(ctx context.Context) error {
	if s.d.name != store.Postgres {
		for _, q := range s.d.ddl {
			if _, err := s.exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(initLockKey)); err != nil {
		return err
	}
	for _, q := range s.d.ddl {
		if _, err := tx.ExecContext(ctx, s.d.sql(q)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (s *SQLStore) Claim(ctx context.Context, c Claim) (bool, error) {
	q := `INSERT INTO "_voltro_schedule_claims" ("claimKey", "schedule", "scheduledAt", "replicaId", "claimedAt")
		VALUES (?, ?, ?, ?, {now})`
	if !s.d.mysqlFamily() {
		q += ` ON CONFLICT ("claimKey") DO NOTHING`
	}
	for attempt := 0; ; attempt++ {
		res, err := s.exec(ctx, q, c.Key(), c.Schedule, s.d.timeArg(c.ScheduledAt), c.ReplicaID)
		var me *mysql.MySQLError
		switch {
		case err == nil:
			n, err := res.RowsAffected()
			if err != nil {
				return false, fmt.Errorf("schedule claim %s: %w", c.Key(), err)
			}
			return n == 1, nil
		case errors.As(err, &me) && me.Number == 1062: // duplicate key: another replica claimed it
			return false, nil
		case errors.As(err, &me) && me.Number == 1213 && attempt < 3: // Galera certification conflict
			continue
		default:
			return false, fmt.Errorf("schedule claim %s: %w", c.Key(), err)
		}
	}
}

func (s *SQLStore) Define(ctx context.Context, d Definition) error {
	_, err := s.exec(ctx, `INSERT INTO "_voltro_schedules" (`+defsColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, {now}) {upsert}`,
		d.Name, d.Spec, d.TimeZone, string(d.Coordination), string(d.Overlap), d.CatchUp, d.ReplicaID)
	if err != nil {
		return fmt.Errorf("schedule define %s: %w", d.Name, err)
	}
	return nil
}

func (s *SQLStore) Insert(ctx context.Context, r Run) (int64, error) {
	started, finished := "{now}", "NULL"
	if r.Status == StatusQueued {
		started = "NULL"
	}
	if !r.Status.Live() {
		finished = "{now}"
	}
	q := `INSERT INTO "_voltro_schedule_runs"
		("schedule", "scheduledAt", "replicaId", "coordinationOutcome", "status", "started", "finished", "error", "heartbeatAt")
		VALUES (?, ?, ?, ?, ?, ` + started + `, ` + finished + `, ?, {now})`
	args := []any{r.Schedule, s.d.timeArg(r.ScheduledAt), r.ReplicaID, string(r.Outcome), string(r.Status), nullString(r.Error)}
	if s.d.name == store.Postgres {
		var id int64
		if err := s.db.QueryRowContext(ctx, s.d.sql(q+` RETURNING "id"`), args...).Scan(&id); err != nil {
			return 0, fmt.Errorf("schedule record %s: %w", ClaimKey(r.Schedule, r.ScheduledAt), err)
		}
		return id, nil
	}
	res, err := s.exec(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("schedule record %s: %w", ClaimKey(r.Schedule, r.ScheduledAt), err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("schedule record %s: %w", ClaimKey(r.Schedule, r.ScheduledAt), err)
	}
	return id, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func (s *SQLStore) Start(ctx context.Context, id int64) (bool, error) {
	res, err := s.exec(ctx, `UPDATE "_voltro_schedule_runs" SET "status" = 'running', "started" = {now}, "heartbeatAt" = {now}
		WHERE "id" = ? AND "status" = 'queued'`, id)
	if err != nil {
		return false, fmt.Errorf("schedule start run %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("schedule start run %d: %w", id, err)
	}
	return n == 1, nil
}

func (s *SQLStore) Finish(ctx context.Context, id int64, status Status, errText string) error {
	_, err := s.exec(ctx, `UPDATE "_voltro_schedule_runs" SET "status" = ?, "finished" = {now}, "error" = ? WHERE "id" = ?`,
		string(status), nullString(errText), id)
	if err != nil {
		return fmt.Errorf("schedule finish run %d: %w", id, err)
	}
	return nil
}

func (s *SQLStore) Heartbeat(ctx context.Context, replicaID string) error {
	_, err := s.exec(ctx, `UPDATE "_voltro_schedule_runs" SET "heartbeatAt" = {now}
		WHERE "status" IN ('running', 'queued') AND "replicaId" = ?`, replicaID)
	if err != nil {
		return fmt.Errorf("schedule heartbeat: %w", err)
	}
	return nil
}

func (s *SQLStore) Active(ctx context.Context, schedule string, stale time.Duration) (Activity, error) {
	rows, err := s.db.QueryContext(ctx, s.d.sql(`SELECT "status", COUNT(*) FROM "_voltro_schedule_runs"
		WHERE "schedule" = ? AND "status" IN ('running', 'queued') AND "heartbeatAt" > {ago}
		GROUP BY "status"`), schedule, s.d.agoArg(stale))
	if err != nil {
		return Activity{}, fmt.Errorf("schedule activity %s: %w", schedule, err)
	}
	defer rows.Close()
	var a Activity
	for rows.Next() {
		var st Status
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return Activity{}, fmt.Errorf("schedule activity %s: %w", schedule, err)
		}
		switch st {
		case StatusRunning:
			a.Running = n
		case StatusQueued:
			a.Queued = n
		}
	}
	if err := rows.Err(); err != nil {
		return Activity{}, fmt.Errorf("schedule activity %s: %w", schedule, err)
	}
	return a, nil
}

func (s *SQLStore) LastScheduledAt(ctx context.Context, schedule string, notAfter time.Time) (time.Time, bool, error) {
	var t nullTime
	err := s.db.QueryRowContext(ctx, s.d.sql(`SELECT MAX("scheduledAt") FROM "_voltro_schedule_runs"
		WHERE "schedule" = ? AND "scheduledAt" <= ?`), schedule, s.d.timeArg(notAfter)).Scan(&t)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("schedule last tick %s: %w", schedule, err)
	}
	return t.T, t.Valid, nil
}

const runColumns = `"id", "schedule", "scheduledAt", "replicaId", "coordinationOutcome", "status", "started", "finished", "error"`

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var at, started, finished nullTime
	var errText sql.NullString
	if err := sc.Scan(&r.ID, &r.Schedule, &at, &r.ReplicaID, &r.Outcome, &r.Status, &started, &finished, &errText); err != nil {
		return Run{}, err
	}
	r.ScheduledAt, r.Started, r.Finished, r.Error = at.T, started.T, finished.T, errText.String
	return r, nil
}

func (s *SQLStore) Runs(ctx context.Context, schedule string, limit int) ([]Run, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	rows, err := s.db.QueryContext(ctx, s.d.sql(`SELECT `+runColumns+` FROM "_voltro_schedule_runs"
		WHERE "schedule" = ? ORDER BY "scheduledAt" DESC, "id" DESC LIMIT ?`), schedule, limit)
	if err != nil {
		return nil, fmt.Errorf("schedule runs %s: %w", schedule, err)
	}
	return collect(rows, scanRun)
}

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func (s *SQLStore) Summaries(ctx context.Context) ([]Summary, error) {
	byName := map[string]*Summary{}
	get := func(name string) *Summary {
		sm, ok := byName[name]
		if !ok {
			sm = &Summary{Name: name, Counts: map[Outcome]int64{}}
			byName[name] = sm
		}
		return sm
	}
	rows, err := s.db.QueryContext(ctx, s.d.sql(`SELECT `+defsColumns+` FROM "_voltro_schedules"`))
	if err != nil {
		return nil, fmt.Errorf("schedule definitions: %w", err)
	}
	defs, err := collect(rows, func(sc interface{ Scan(...any) error }) (Definition, error) {
		var d Definition
		var at nullTime
		err := sc.Scan(&d.Name, &d.Spec, &d.TimeZone, &d.Coordination, &d.Overlap, &d.CatchUp, &d.ReplicaID, &at)
		d.UpdatedAt = at.T
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("schedule definitions: %w", err)
	}
	for _, d := range defs {
		get(d.Name).Definition = &d
	}
	type count struct {
		name    string
		outcome Outcome
		n       int64
	}
	rows, err = s.db.QueryContext(ctx, s.d.sql(`SELECT "schedule", "coordinationOutcome", COUNT(*) FROM "_voltro_schedule_runs"
		GROUP BY "schedule", "coordinationOutcome"`))
	if err != nil {
		return nil, fmt.Errorf("schedule counts: %w", err)
	}
	counts, err := collect(rows, func(sc interface{ Scan(...any) error }) (count, error) {
		var c count
		err := sc.Scan(&c.name, &c.outcome, &c.n)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("schedule counts: %w", err)
	}
	for _, c := range counts {
		get(c.name).Counts[c.outcome] = c.n
	}
	for name, sm := range byName {
		r, err := scanRun(s.db.QueryRowContext(ctx, s.d.sql(`SELECT `+runColumns+` FROM "_voltro_schedule_runs"
			WHERE "schedule" = ? AND "coordinationOutcome" <> 'lostLock' ORDER BY "scheduledAt" DESC, "id" DESC LIMIT 1`), name))
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, fmt.Errorf("schedule last run %s: %w", name, err)
		default:
			sm.Last = &r
		}
	}
	return sortedSummaries(byName), nil
}

func (s *SQLStore) GC(ctx context.Context, r Retention) (GCResult, error) {
	var out GCResult
	steps := []struct {
		n    *int64
		q    string
		args []any
	}{
		{&out.Claims, `DELETE FROM "_voltro_schedule_claims" WHERE "claimedAt" < {ago}`, []any{s.d.agoArg(r.Claims)}},
		{&out.Abandoned, `UPDATE "_voltro_schedule_runs" SET "status" = 'abandoned', "finished" = {now}, "error" = ?
			WHERE "status" IN ('running', 'queued') AND "heartbeatAt" < {ago}`, []any{abandonedError, s.d.agoArg(r.Stale)}},
		{&out.Runs, `DELETE FROM "_voltro_schedule_runs" WHERE "status" NOT IN ('running', 'queued') AND "finished" < {ago}`, []any{s.d.agoArg(r.Runs)}},
	}
	for _, st := range steps {
		res, err := s.exec(ctx, st.q, st.args...)
		if err != nil {
			return out, fmt.Errorf("schedule gc: %w", err)
		}
		if *st.n, err = res.RowsAffected(); err != nil {
			return out, fmt.Errorf("schedule gc: %w", err)
		}
	}
	return out, nil
}
