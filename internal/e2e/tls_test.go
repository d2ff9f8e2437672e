package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
	"github.com/voltro/voltro/internal/tlstest"
)

// A runner process and a client app, both configured through
// VOLTRO_RUNNER_TLS_CERT, _KEY and _CA, on MariaDB, where wake-ups and reply
// pushes travel over the runner port (no NOTIFY). With polling at a minute,
// a request that completes in seconds crossed both ways over mutual TLS; a
// volatile message crosses too. A caller that speaks plain HTTP is refused
// at the handshake, and the runner's log says so.
func TestMessagesCrossProcessesOverMutualTLS(t *testing.T) {
	url := testdb.MariaDB(t, "e2e_mtls")
	ca := tlstest.NewCA(t, "e2e cluster CA")
	tlsEnv := func() map[string]string {
		f := ca.Issue(t, "127.0.0.1").WriteFiles(t, t.TempDir(), ca)
		return map[string]string{"VOLTRO_RUNNER_TLS_CERT": f.Cert, "VOLTRO_RUNNER_TLS_KEY": f.Key, "VOLTRO_RUNNER_TLS_CA": f.CA, "VOLTRO_POLL_INTERVAL": "60s"}
	}
	penv := tlsEnv()
	penv["DB_URL"] = url
	p := startProc(t, "mtls-runner", penv)

	env := tlsEnv()
	for k, v := range map[string]string{"DB_URL": url, "POD_NAME": "mtls-client", "VOLTRO_CLUSTER_SECRET": "e2e-secret",
		"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(freePort(t))} {
		env[k] = v
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

	d := look(t, url)
	testwait.For(t, 30*time.Second, "the runner owns every shard", func() bool { return owners(t, d)[p.addr] == 300 })
	// The client routes a wake-up to the runner it has seen in its own last
	// listing of the cluster; with polling at a minute, a request sent
	// before that listing would wait for the poll, not cross the port.
	testwait.For(t, 30*time.Second, "the client to list the runner among the live ones", func() bool {
		_, body := get(t, "http://"+app.InspectAddr()+inspect.PathInspect)
		var doc inspect.Doc
		return json.Unmarshal([]byte(body), &doc) == nil && slices.Contains(doc.LiveRunners, p.addr)
	})
	ids := entitiesOwnedBy(t, d, p.addr, 3)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for i, id := range ids {
		start := time.Now()
		got, err := work.Request(rctx, app, id, Work{N: 40 + i})
		if err != nil || got != 41+i {
			t.Fatalf("request %d across processes: %d %v", i, got, err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("request %d took %s with polling at 60 s: the wake-up or the reply push did not cross", i, took)
		}
	}
	if got, err := work.Volatile(rctx, app, ids[0], Work{N: 7}); err != nil || got != 8 {
		t.Fatalf("volatile across processes: %d %v", got, err)
	}

	// A plain caller holding the secret: refused at the handshake.
	_, err = rpc.NewClient("e2e-secret", "attacker:1").Volatile(rctx, p.addr, rpc.VolatileRequest{Shard: "default/0", EntityType: "e2e.work", EntityID: ids[0], Payload: []byte(`{"n":1}`)})
	if err == nil || !strings.Contains(err.Error(), "speaks TLS") {
		t.Fatalf("a plain call to the mutual TLS runner: %v", err)
	}
	testwait.For(t, 10*time.Second, "the refusal in the runner's log", func() bool {
		for _, rec := range p.logRecords() {
			if rec["msg"] == "runner rpc: refused a TLS handshake" && strings.HasPrefix(fmt.Sprint(rec["reason"]), "not TLS") && rec["level"] == "WARN" {
				return true
			}
		}
		return false
	})
	var mode string
	for _, rec := range p.logRecords() {
		if m := fmt.Sprint(rec["msg"]); strings.HasPrefix(m, "runner port: ") {
			mode = m
		}
	}
	if !strings.HasPrefix(mode, "runner port: mutual TLS") {
		t.Fatalf("the runner's boot log does not say mutual TLS: %q", mode)
	}
	if n := countKind(p.events(), "END"); n != len(ids)+1 {
		t.Fatalf("the runner handled %d messages, want %d", n, len(ids)+1)
	}
	p.term()
}
