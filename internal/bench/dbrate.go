package bench

// The database's own figures: its single-row commit rate, and how many
// statements it served over an idle window.

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
)

// commitRate measures the store's single-row commit rate on conns
// connections for d (store.CommitProber).
func commitRate(ctx context.Context, d store.Driver, conns int, within time.Duration) (float64, error) {
	p := d.Capabilities().Bench.CommitRate
	if p == nil {
		return 0, fmt.Errorf("the %s store cannot measure its commit rate", d.Dialect())
	}
	return p.CommitRate(ctx, conns, within)
}

// idleRate reads the server's statement counters around an idle window
// (store.StatementCounter).
func idleRate(ctx context.Context, d store.Driver, window time.Duration) (float64, string, error) {
	c := d.Capabilities().Bench.Statements
	if c == nil {
		return 0, "no server counters for " + string(d.Dialect()), nil
	}
	rate, err := store.StatementRate(ctx, c, window)
	if err != nil {
		return 0, "", err
	}
	return rate, fmt.Sprintf("%s, over %s", c.StatementCounter().Note, window), nil
}

// openStore opens a store of its own on dbURL, configured by env (nil for
// none), for the benchmark's reads and writes beside the app's: the same
// configuration, so the same pool settings as the app's.
func openStore(ctx context.Context, env func(string) string, dbURL string) (store.Driver, config.Config, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	c, err := config.FromEnv(env, dbURL)
	if err != nil {
		return nil, c, err
	}
	d, err := open.Open(ctx, c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return d, c, err
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
// measured on a store opened beside it with its configuration, before
// anything else runs.
type baseline struct {
	app              *voltro.App
	db               *sql.DB
	dialect          string
	commit1, commit8 float64
	// nodes are the URLs of the cluster's nodes (one when the database is
	// a single server); app runs on the first.
	nodes []string
}

// openBaseline starts nothing yet: it opens the app on dbURL (a runner on
// a free loopback port, replica "bench") and measures the commit rates.
// dbURL may list the nodes of a multi-primary cluster, comma-separated:
// the app is on the first, and the commit rates are the cluster's, their
// connections spread over the nodes.
func openBaseline(ctx context.Context, dbURL string, env func(string) string, log *slog.Logger) (baseline, error) {
	var b baseline
	var err error
	if b.nodes, err = nodeURLs(dbURL); err != nil {
		return b, err
	}
	port, err := freePort()
	if err != nil {
		return b, err
	}
	env = overlay(env, map[string]string{"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(port), "POD_NAME": "bench"})
	if b.app, err = voltro.New(ctx, voltro.WithDB(b.nodes[0]), voltro.WithEnv(env), voltro.WithLogger(log)); err != nil {
		return b, err
	}
	fail := func(err error) (baseline, error) {
		_ = b.app.Close(context.WithoutCancel(ctx))
		return b, err
	}
	if b.db, b.dialect, err = b.app.DB(); err != nil {
		return fail(err)
	}
	stores := make([]store.Driver, 0, len(b.nodes))
	defer func() {
		for _, d := range stores {
			_ = d.Close()
		}
	}()
	for _, u := range b.nodes {
		d, _, err := openStore(ctx, env, u)
		if err != nil {
			return fail(err)
		}
		stores = append(stores, d)
	}
	if b.commit1, err = commitRate(ctx, stores[0], 1, 3*time.Second); err != nil {
		return fail(fmt.Errorf("commit rate: %w", err))
	}
	if b.commit8, err = clusterCommitRate(ctx, stores, 8, 3*time.Second); err != nil {
		return fail(fmt.Errorf("commit rate: %w", err))
	}
	return b, nil
}
