package voltro_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/workflow/wftest"
)

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// appOn builds NewApp for a database URL maker.
func appOn(dbURL func(t *testing.T) string) wftest.NewApp {
	return func(t *testing.T, register func(*voltro.App)) *voltro.App {
		env := map[string]string{
			"DB_URL": dbURL(t), "POD_NAME": "test", "VOLTRO_CLUSTER_SECRET": "s",
			"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(freePort(t)),
			"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s",
		}
		ctx := context.Background()
		app, err := voltro.New(ctx, voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(testLogger()))
		if err != nil {
			t.Fatal(err)
		}
		register(app)
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.Close(context.Background()) })
		start := time.Now()
		for {
			if owned, total := app.Shards(); owned == total {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatal("the app did not take its shards within 30s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("all shards held %s after start", time.Since(start).Round(time.Millisecond))
		return app
	}
}

func TestWorkflowsMemory(t *testing.T) {
	wftest.Run(t, appOn(func(*testing.T) string { return "memory:" }))
}

func TestWorkflowsSQLite(t *testing.T) {
	wftest.Run(t, appOn(func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "wf.db") }))
}

func TestWorkflowsPostgres(t *testing.T) {
	wftest.Run(t, appOn(func(t *testing.T) string { return testdb.Postgres(t, "wf_conformance") }))
}

func TestWorkflowsMariaDB(t *testing.T) {
	wftest.Run(t, appOn(func(t *testing.T) string { return testdb.MariaDB(t, "wf_conformance") }))
}

// testLogger discards logs unless VOLTRO_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("VOLTRO_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
