package bench

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testdb"
)

// The seeded history must look like the real one, or --retained measures
// something else: per run, every table holds as many rows for a seeded run
// as for one that really ran.
func TestSeedHistoryLeavesWhatARunLeaves(t *testing.T) {
	for _, tc := range []struct{ name, real, seeded string }{
		{"postgres", testdb.Postgres(t, "seedreal"), testdb.Postgres(t, "seeded")},
		{"mariadb", testdb.MariaDB(t, "seedreal"), testdb.MariaDB(t, "seeded")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			const runs, seeded = 5, 1234
			real := perRun(t, ctx, tc.real, quiet, runs, func(cfg WorkflowsConfig) error {
				app, _ := testApp(t, ctx, cfg.DBURL, quiet)
				if err := app.Register(benchWorkflow); err != nil {
					return err
				}
				if err := app.Start(ctx); err != nil {
					return err
				}
				if err := waitOwned(ctx, app, 60*time.Second); err != nil {
					return err
				}
				for i := 0; i < runs; i++ {
					if _, err := benchWorkflow.Run(ctx, app, i); err != nil {
						return err
					}
				}
				return app.Close(ctx) // flushes the introspection rows written in the background
			})
			seed := perRun(t, ctx, tc.seeded, quiet, seeded, func(cfg WorkflowsConfig) error { return seed(ctx, cfg, cfg.DBURL, seeded) })
			for table, n := range real {
				if seed[table] != n {
					t.Errorf("%s: a real run leaves %.2f rows, a seeded one %.2f", table, n, seed[table])
				}
			}
		})
	}
}

// testApp is an app on url, closed at the end of the test, and its pool.
func testApp(t *testing.T, ctx context.Context, url string, log *slog.Logger) (*voltro.App, *sql.DB) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	env := overlay(nil, map[string]string{"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(port), "POD_NAME": "seedtest"})
	app, err := voltro.New(ctx, voltro.WithDB(url), voltro.WithEnv(env), voltro.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.WithoutCancel(ctx)) })
	db, _, err := app.DB()
	if err != nil {
		t.Fatal(err)
	}
	return app, db
}

// perRun makes n runs with make and returns the rows per run in each table.
func perRun(t *testing.T, ctx context.Context, url string, log *slog.Logger, n int, make func(WorkflowsConfig) error) map[string]float64 {
	t.Helper()
	_, db := testApp(t, ctx, url, log) // migrates
	if err := make(WorkflowsConfig{DBURL: url}); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, table := range []string{"voltro_workflow_executions", "voltro_workflow_journal", "voltro_workflow_signals", "_voltro_workflow_start_contexts",
		"_voltro_workflow_runs", "_voltro_workflow_run_steps", "_voltro_workflow_run_events", "voltro_messages", "voltro_replies"} {
		var c int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&c); err != nil {
			t.Fatal(err)
		}
		out[table] = float64(c) / float64(n)
	}
	return out
}
