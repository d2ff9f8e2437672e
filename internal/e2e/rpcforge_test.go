package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/demo"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// An attacker on loopback forges a workflow timer to a runner process on
// PostgreSQL with no VOLTRO_CLUSTER_SECRET: with the old derivable secret,
// with none, with a wrong one, and even with the real stored secret (a
// database reader): every call is refused, the refusals are logged, and
// the hour-long sleep stays suspended.
func TestForgedTimerLeavesSleepingRunSuspended(t *testing.T) {
	url := testdb.Postgres(t, "rpcforge")
	p := startProc(t, "forge-runner", map[string]string{"DB_URL": url, "VOLTRO_CLUSTER_SECRET": "", "E2E_SLEEPERS": "0"})

	env := map[string]string{"DB_URL": url, "POD_NAME": "forge-client",
		"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(freePort(t))}
	ctx := context.Background()
	app, err := voltro.New(ctx, voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	h, err := demo.Nap.Start(ctx, app, demo.NapInput{Seconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	db := look(t, url).Capabilities().SQL
	status := func() (st, shard string) {
		_ = db.QueryRowContext(ctx, `SELECT status, shard FROM voltro_workflow_executions WHERE id = $1`, h.ID).Scan(&st, &shard)
		return st, shard
	}
	testwait.For(t, 20*time.Second, "the nap suspended", func() bool { st, _ := status(); return st == "suspended" })
	_, shard := status()
	var stored string
	if err := db.QueryRowContext(ctx, `SELECT secret FROM voltro_cluster_secret`).Scan(&stored); err != nil || len(stored) != 64 {
		t.Fatalf("no generated secret in the database: %q %v", stored, err)
	}
	timer := rpc.VolatileRequest{Shard: shard, EntityType: "workflow/demo.nap", EntityID: h.ID, Tag: "timer", Payload: []byte(`{"seq":1,"kind":"sleep","name":""}`)}
	dbName := url[strings.LastIndex(url, "/")+1:]
	if i := strings.IndexByte(dbName, '?'); i >= 0 {
		dbName = dbName[:i]
	}
	for _, secret := range []string{"derived:postgres:" + dbName, "", "wrong-0123456789abcdef", stored} {
		_, err := rpc.NewClient(secret, "attacker:1").Volatile(ctx, p.addr, timer)
		if err == nil {
			t.Fatalf("a forged timer with secret %q was accepted", secret)
		}
		if secret != stored && !errors.Is(err, errs.ErrUnauthenticated) {
			t.Fatalf("secret %q: %v", secret, err)
		}
	}
	time.Sleep(2 * time.Second)
	if st, _ := status(); st != "suspended" {
		t.Fatalf("the forged timer woke the run: %s", st)
	}
	refusals := 0
	for _, rec := range p.logRecords() {
		if fmt.Sprint(rec["msg"]) == "runner rpc: refused a call" {
			refusals++
		}
	}
	if refusals != 3 {
		t.Fatalf("%d refusals logged, want 3", refusals)
	}
}
