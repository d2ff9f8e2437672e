package voltro_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/workflow/wftest"
)

func freePort(t *testing.T) int {
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
		app, err := voltro.New(ctx, voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			t.Fatal(err)
		}
		register(app)
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.Close(context.Background()) })
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
