package bench

// voltro bench workflows --retained N: phase (b) on a database that keeps
// N finished runs, beside the fresh one, in alternating pairs on the same
// server in the same run.

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/sharding"
	"github.com/voltro/voltro/internal/store"
)

// retainedPairs is how many fresh/retained pairs phase (b) alternates.
const retainedPairs = 3

// RetainedResult holds the figures of the retained comparison.
type RetainedResult struct {
	N        int           // finished runs kept in the retained database
	Seeded   int           // of which this run seeded
	SeedTime time.Duration // how long seeding took
	Fresh    []float64     // workflows/s of each pair's fresh pass
	Retained []float64     // … and its retained pass
	Ratio    float64       // median retained / median fresh
	// The same with the retained database's sweeper deleting its old
	// history during the pairs: rates, ratio, and runs it deleted in that
	// time.
	SweepFresh, Sweeping []float64
	SweepRatio           float64
	Swept                int
	SweepTime            time.Duration
	RetainedDB           string // redacted
}

// measureRetained alternates phase (b) between fresh (the benchmark's own
// app) and an app on the retained database, seeded first to cfg.Retained
// finished runs that finished 8 to 38 days ago.
func measureRetained(ctx context.Context, cfg WorkflowsConfig, fresh *voltro.App) (RetainedResult, error) {
	r := RetainedResult{N: cfg.Retained}
	dbURL := cfg.RetainedDB
	if dbURL == "" {
		var err error
		if dbURL, err = siblingDatabase(ctx, cfg.Env, cfg.DBURL, "_retained"); err != nil {
			return r, err
		}
	}
	r.RetainedDB = redactURL(dbURL)
	// The kept pairs: nothing deleted, whatever the environment says.
	app, err := startRetained(ctx, cfg, dbURL, "0")
	if err != nil {
		return r, fmt.Errorf("retained database %s: %w", r.RetainedDB, err)
	}
	defer app.Close(context.WithoutCancel(ctx))
	d, _, err := openStore(ctx, cfg.Env, dbURL)
	if err != nil {
		return r, fmt.Errorf("retained database %s: %w", r.RetainedDB, err)
	}
	defer d.Close()
	have, err := countCompleted(ctx, d)
	if err != nil {
		return r, fmt.Errorf("count retained runs: %w", err)
	}
	if have < cfg.Retained {
		r.Seeded = cfg.Retained - have
		t0 := time.Now()
		if err := seed(ctx, cfg, dbURL, r.Seeded); err != nil {
			return r, err
		}
		r.SeedTime = time.Since(t0)
		if err := analyze(ctx, d); err != nil {
			return r, err
		}
	}
	if err := pairs(ctx, cfg, fresh, app, &r.Fresh, &r.Retained); err != nil {
		return r, err
	}
	r.Ratio = median(r.Retained) / median(r.Fresh)

	// The sweeping pairs: the same database with the default retention
	// (7 days), so its sweeper deletes the seeded history (8 to 38 days
	// old) while the runs go on.
	if err := app.Close(ctx); err != nil {
		return r, err
	}
	if app, err = startRetained(ctx, cfg, dbURL, "7d"); err != nil {
		return r, err
	}
	defer app.Close(context.WithoutCancel(ctx))
	start, err := countCompleted(ctx, d)
	if err != nil {
		return r, err
	}
	// the sweeper's first pass comes a few seconds after boot: measure
	// from its first deletions on
	before := start
	for deadline := time.Now().Add(30 * time.Second); before == start; {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("the retained database's sweeper deleted nothing in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
		if before, err = countCompleted(ctx, d); err != nil {
			return r, err
		}
	}
	t0 := time.Now()
	if err := pairs(ctx, cfg, fresh, app, &r.SweepFresh, &r.Sweeping); err != nil {
		return r, err
	}
	after, err := countCompleted(ctx, d)
	if err != nil {
		return r, err
	}
	// runs the pairs added stay (they are new); the rest were swept
	r.Swept = before + retainedPairs*cfg.Concurrent - after
	r.SweepTime = time.Since(t0)
	r.SweepRatio = median(r.Sweeping) / median(r.SweepFresh)
	return r, nil
}

// startRetained starts the benchmark's app on the retained database with
// VOLTRO_RETENTION forced to retention.
func startRetained(ctx context.Context, cfg WorkflowsConfig, dbURL, retention string) (*voltro.App, error) {
	env := func(k string) string {
		switch k {
		case "VOLTRO_RETENTION":
			return retention
		case "POD_NAME":
			return "bench-retained"
		}
		if cfg.Env != nil {
			return cfg.Env(k)
		}
		return ""
	}
	b, err := openBaseline(ctx, dbURL, env, cfg.Logger)
	if err != nil {
		return nil, err
	}
	app := b.app
	if err := app.Register(benchWorkflow); err != nil {
		_ = app.Close(ctx)
		return nil, err
	}
	if err := app.Start(ctx); err != nil {
		_ = app.Close(ctx)
		return nil, err
	}
	if err := waitOwned(ctx, app, 60*time.Second); err != nil {
		_ = app.Close(ctx)
		return nil, err
	}
	return app, nil
}

// pairs alternates phase (b) on fresh and on retained, retainedPairs times.
func pairs(ctx context.Context, cfg WorkflowsConfig, fresh, retained *voltro.App, f, r *[]float64) error {
	for i := 0; i < retainedPairs; i++ {
		for _, x := range []struct {
			app *voltro.App
			out *[]float64
		}{{fresh, f}, {retained, r}} {
			rate, _, err := concurrent(ctx, []*voltro.App{x.app}, cfg.Concurrent, cfg.Starters)
			if err != nil {
				return err
			}
			*x.out = append(*x.out, rate)
		}
	}
	return nil
}

// seed adds n finished runs through the store's HistorySeeder.
func seed(ctx context.Context, cfg WorkflowsConfig, dbURL string, n int) error {
	d, c, err := openStore(ctx, cfg.Env, dbURL)
	if err != nil {
		return err
	}
	defer d.Close()
	s := d.Capabilities().Bench.Seeder
	if s == nil {
		return fmt.Errorf("--retained: the %s store cannot seed history", d.Dialect())
	}
	now := time.Now()
	return s.SeedHistory(ctx, store.HistorySeed{N: n, Name: benchWorkflow.Name(), From: now.Add(-38 * 24 * time.Hour), To: now.Add(-8 * 24 * time.Hour),
		Shards: sharding.All(c.Groups, c.ShardCount)})
}

// countCompleted counts the completed runs d keeps (store.Overview).
func countCompleted(ctx context.Context, d store.Driver) (int, error) {
	n, err := d.CountExecutions(ctx, store.ExecCompleted)
	return n[store.ExecCompleted], err
}

// analyze refreshes the planner's statistics after a bulk load, as
// autovacuum would some time later (store.HistoryAnalyzer).
func analyze(ctx context.Context, d store.Driver) error {
	a := d.Capabilities().Bench.Analyzer
	if a == nil {
		return fmt.Errorf("--retained: the %s store cannot refresh its planner statistics", d.Dialect())
	}
	return a.AnalyzeHistory(ctx)
}

// siblingDatabase is the URL of database <name><suffix> on the server of
// dbURL, created if it does not exist (store.DatabaseCreator).
func siblingDatabase(ctx context.Context, env func(string) string, dbURL, suffix string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil || u.Path == "" || u.Path == "/" {
		return "", fmt.Errorf("--retained needs a database name in the URL (or --retained-db)")
	}
	name := strings.TrimPrefix(u.Path, "/") + suffix
	u.Path = "/" + name
	d, _, err := openStore(ctx, env, dbURL)
	if err != nil {
		return "", err
	}
	defer d.Close()
	c := d.Capabilities().Bench.Databases
	if c == nil {
		return "", fmt.Errorf("--retained: the %s store has no server to create a database on: pass --retained-db", d.Dialect())
	}
	if err := c.CreateDatabase(ctx, name); err != nil {
		return "", fmt.Errorf("create the retained database (or pass --retained-db): %w", err)
	}
	return u.String(), nil
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
