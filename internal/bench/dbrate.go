package bench

// The database's own figures: its single-row commit rate, and how many
// statements it served over an idle window.

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltro/voltro"
)

// commitRate runs autocommit single-row INSERTs on conns connections for d.
func commitRate(ctx context.Context, db *sql.DB, dialect string, conns int, d time.Duration) (float64, error) {
	ddl := `CREATE TABLE IF NOT EXISTS voltro_bench_commit (id BIGINT PRIMARY KEY AUTO_INCREMENT, v INT NOT NULL)`
	ins := `INSERT INTO voltro_bench_commit (v) VALUES (?)`
	switch dialect {
	case "postgres":
		ddl = `CREATE TABLE IF NOT EXISTS voltro_bench_commit (id BIGSERIAL PRIMARY KEY, v INT NOT NULL)`
		ins = `INSERT INTO voltro_bench_commit (v) VALUES ($1)`
	case "sqlite":
		ddl = `CREATE TABLE IF NOT EXISTS voltro_bench_commit (id INTEGER PRIMARY KEY AUTOINCREMENT, v INT NOT NULL)`
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return 0, err
	}
	defer db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM voltro_bench_commit`)
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(cctx)
			if err != nil {
				once.Do(func() { firstErr = err })
				return
			}
			defer conn.Close()
			for i := 0; cctx.Err() == nil; i++ {
				if _, err := conn.ExecContext(cctx, ins, i); err != nil {
					if cctx.Err() == nil {
						once.Do(func() { firstErr = err })
					}
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

// idleRate reads the server's statement counters around an idle window.
func idleRate(ctx context.Context, db *sql.DB, dialect string, window time.Duration) (float64, string, error) {
	var q, note string
	switch dialect {
	case "postgres":
		q = `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`
		note = "pg_stat_database transactions of this database; each runner statement is its own transaction"
	case "mariadb", "mysql":
		q = `SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN
			('COM_SELECT', 'COM_INSERT', 'COM_UPDATE', 'COM_DELETE', 'COM_BEGIN', 'COM_COMMIT', 'COM_ROLLBACK')`
		note = "server-wide statement counters (select, insert, update, delete, begin, commit, rollback): anything else on the server counts too"
	default:
		return 0, "no server counters for " + dialect, nil
	}
	read := func() (float64, error) {
		var v float64
		err := db.QueryRowContext(ctx, q).Scan(&v)
		return v, err
	}
	if dialect == "postgres" {
		// Backends that went idle flush their pending statistics within
		// 10 s (PostgreSQL's idle stats interval): let the load's tail land
		// before the first reading.
		time.Sleep(11 * time.Second)
	}
	a, err := read()
	if err != nil {
		return 0, "", err
	}
	time.Sleep(window)
	if dialect == "postgres" {
		time.Sleep(1500 * time.Millisecond)
	}
	b, err := read()
	if err != nil {
		return 0, "", err
	}
	own := 1.0 // the first read is counted in b
	secs := window.Seconds()
	if dialect == "postgres" {
		secs += 1.5
	}
	return (b - a - own) / secs, fmt.Sprintf("%s, over %s", note, window), nil
}

func waitOwned(ctx context.Context, app *voltro.App, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		owned, total := app.Shards()
		if owned == total {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("this runner holds %d of %d shards after %s (another runner alive on this database?)", owned, total, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// baseline is a benchmark's app and the database's own commit rates,
// measured on the app's pool before anything else runs.
type baseline struct {
	app              *voltro.App
	db               *sql.DB
	dialect          string
	commit1, commit8 float64
}

// openBaseline starts nothing yet: it opens the app on dbURL (a runner on
// a free loopback port, replica "bench") and measures the commit rates.
func openBaseline(ctx context.Context, dbURL string, env func(string) string, log *slog.Logger) (baseline, error) {
	var b baseline
	port, err := freePort()
	if err != nil {
		return b, err
	}
	env = overlay(env, map[string]string{"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(port), "POD_NAME": "bench"})
	if b.app, err = voltro.New(ctx, voltro.WithDB(dbURL), voltro.WithEnv(env), voltro.WithLogger(log)); err != nil {
		return b, err
	}
	fail := func(err error) (baseline, error) {
		_ = b.app.Close(context.WithoutCancel(ctx))
		return b, err
	}
	if b.db, b.dialect, err = b.app.DB(); err != nil {
		return fail(err)
	}
	if b.commit1, err = commitRate(ctx, b.db, b.dialect, 1, 3*time.Second); err != nil {
		return fail(fmt.Errorf("commit rate: %w", err))
	}
	if b.commit8, err = commitRate(ctx, b.db, b.dialect, 8, 3*time.Second); err != nil {
		return fail(fmt.Errorf("commit rate: %w", err))
	}
	return b, nil
}
