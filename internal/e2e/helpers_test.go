package e2e

// Test-side helpers: a client app that sends, a direct store handle to look
// at the database, and waiting.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/sharding"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
)

var work = voltro.NewEntity("e2e.work", func(context.Context, string, Work) (int, error) {
	panic("the test process only sends")
})

// client is an app hosting no entity type: it sends and owns no shards.
func client(t *testing.T, dbURL string) *voltro.App {
	t.Helper()
	env := map[string]string{
		"DB_URL": dbURL, "POD_NAME": "test-client", "VOLTRO_CLUSTER_SECRET": "e2e-secret",
		"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(freePort(t)),
	}
	ctx := context.Background()
	app, err := voltro.New(ctx, voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	return app
}

// look opens the store directly, as an operator would.
func look(t *testing.T, dbURL string) store.Driver {
	t.Helper()
	cfg, err := config.FromEnv(func(string) string { return "" }, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	d, err := open.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// owners maps runner address -> number of shards it holds in the ledger.
func owners(t *testing.T, d store.Driver) map[string]int {
	locks, err := d.ShardLocks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range locks {
		if l.Owner != "" && !l.Expired {
			out[l.Owner]++
		}
	}
	return out
}

// entitiesOwnedBy returns n entity ids whose shards the ledger gives owner.
func entitiesOwnedBy(t *testing.T, d store.Driver, owner string, n int) []string {
	locks, err := d.ShardLocks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mine := map[string]bool{}
	for _, l := range locks {
		if l.Owner == owner {
			mine[l.Shard] = true
		}
	}
	var ids []string
	for i := 0; len(ids) < n && i < 100000; i++ {
		id := fmt.Sprintf("ent-%d", i)
		if mine[sharding.For("default", id, 300)] {
			ids = append(ids, id)
		}
	}
	if len(ids) < n {
		t.Fatalf("only %d entities found on %s's shards", len(ids), owner)
	}
	return ids
}
