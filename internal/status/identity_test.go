package status_test

// Regression tests of what the status surfaces attribute to a row, on live
// databases:
//   - PostgreSQL: an instance is SIGKILLed and a new one (another replica)
//     takes over its VOLTRO_INSPECT_ADDR. The dead row must not show the new
//     instance's runner, shards or readiness, and `voltro logs` must not
//     print the new instance's records for the dead one.
//   - MariaDB with a binlog: two instances with one POD_NAME (so one binlog
//     server_id) are flagged on their rows and in the footer, in red, in
//     inspect, and in the instance's own log.
//   - MariaDB with a binlog: a change feed that fell back to inline emit
//     shows in the CDC column with its reason.

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/voltro/voltro/internal/status"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/observe/cli"
	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/testdb"
)

func TestLiveReusedInspectAddress(t *testing.T) {
	url := testdb.Postgres(t, "status_reuse")
	regDir := t.TempDir()
	t.Setenv(registry.EnvDir, regDir)
	inspect := "127.0.0.1:" + freePort(t)
	env := func(name string) map[string]string {
		return map[string]string{
			"DB_URL": url, "POD_NAME": name, "VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1",
			"VOLTRO_WORKFLOW_RUNNER_PORT": freePort(t), "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s",
			"VOLTRO_CLUSTER_SECRET": "status-secret", "VOLTRO_SHARDS": "8", "VOLTRO_INSPECT_ADDR": inspect,
		}
	}
	st, cfg := look(t, url)
	o := status.Options{Store: st, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database, RegistryDir: regDir, Heartbeat: time.Second}
	dead := startChild(t, env("reuse-0"))
	waitReport(t, o, 30*time.Second, "reuse-0 ready", func(r *status.Report) bool {
		in := byReplica(r)["reuse-0"]
		return in.Ready != nil && *in.Ready
	})
	deadRunner := byReplica(collect(t, o))["reuse-0"].RunnerAddress
	dead.kill()
	startApp(t, env("reuse-1"), workEntity())

	r := waitReport(t, o, 30*time.Second, "reuse-1 ready with the shards, the dead row still listed", func(r *status.Report) bool {
		in, ok := byReplica(r)["reuse-1"]
		_, old := byReplica(r)["reuse-0"]
		return ok && old && in.Ready != nil && *in.Ready && in.OwnedShards == 8
	})
	old, live := byReplica(r)["reuse-0"], byReplica(r)["reuse-1"]
	if old.Reachable || old.Ready != nil || old.OwnedShardsSource == "inspect" || old.RunnerAddress != deadRunner ||
		old.AnsweredBy == nil || old.AnsweredBy.ReplicaID != "reuse-1" || old.AnsweredBy.RunnerAddress != live.RunnerAddress ||
		!strings.Contains(old.UnreachableReason, "reuse-1") || old.Tier != "full" || old.CDCFlavor != "" || old.Duplicate {
		t.Fatalf("the dead row took the new instance's answer: %+v", old)
	}
	if !live.Reachable || live.AnsweredBy != nil || live.Duplicate || len(r.Duplicates) != 0 {
		t.Fatalf("the live row: %+v; duplicates %+v", live, r.Duplicates)
	}
	var table bytes.Buffer
	if err := status.WriteTable(&table, r, false); err != nil {
		t.Fatal(err)
	}
	if l := tableLine(table.String(), "reuse-0"); !strings.Contains(l, "OTHER-INSTANCE") || !strings.Contains(l, "UNREACHABLE") || strings.Contains(l, "ready") {
		t.Fatalf("the dead row's line: %q\n%s", l, table.String())
	}
	if !strings.Contains(table.String(), "reuse-0 UNREACHABLE: "+inspect+" answers as replica reuse-1") {
		t.Fatalf("the reason is not shown:\n%s", table.String())
	}
	var js bytes.Buffer
	if err := status.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, loadSchema(t), js.Bytes())

	// voltro logs: the dead instance's records are not the new one's
	lo := cli.LogsOptions{Store: st, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database, RegistryDir: regDir, Format: "json", Process: "reuse-0"}
	var out, errb bytes.Buffer
	if err := cli.Logs(context.Background(), lo, &out, &errb); err == nil || out.Len() > 0 {
		t.Fatalf("logs of the dead instance: err %v, printed:\n%s", err, out.String())
	}
	if !strings.Contains(errb.String(), "replica reuse-1") {
		t.Fatalf("stderr does not say who answered: %s", errb.String())
	}
	out.Reset()
	errb.Reset()
	lo.Process = ""
	if err := cli.Logs(context.Background(), lo, &out, &errb); err != nil {
		t.Fatalf("logs: %v\n%s", err, errb.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec struct {
			Replica string `json:"replicaId"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Replica != "reuse-1" {
			t.Fatalf("a record not of reuse-1 (%v): %s", err, l)
		}
	}
	if !strings.Contains(errb.String(), "reuse-0") {
		t.Fatalf("stderr does not name the dead row: %s", errb.String())
	}
}

// syncBuf is a log sink safe for the app's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startLoggedApp is startApp with the app's log kept.
func startLoggedApp(t *testing.T, env map[string]string, items ...voltro.Registrable) (*voltro.App, *syncBuf) {
	t.Helper()
	logs := &syncBuf{}
	lookup := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == registry.EnvDir || k == registry.EnvProcess {
			return os.Getenv(k)
		}
		return ""
	}
	ctx := context.Background()
	app, err := voltro.New(ctx, voltro.WithEnv(lookup), voltro.WithLogger(slog.New(slog.NewTextHandler(io.MultiWriter(logs), nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(items...); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	return app, logs
}

func inspectDoc(t *testing.T, app *voltro.App) inspect.Doc {
	t.Helper()
	resp, err := http.Get("http://" + app.InspectAddr() + inspect.PathInspect)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc inspect.Doc
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestLiveDuplicatePodNameMariaDB(t *testing.T) {
	srv := testdb.StartMariaDBBinlog(t)
	url := srv.Database(t, "dup")
	regDir := t.TempDir()
	t.Setenv(registry.EnvDir, regDir)
	env := func(name string) map[string]string {
		return map[string]string{
			"DB_URL": url, "POD_NAME": name, "VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1",
			"VOLTRO_WORKFLOW_RUNNER_PORT": freePort(t), "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s",
			"VOLTRO_CLUSTER_SECRET": "status-secret", "VOLTRO_SHARDS": "8",
		}
	}
	st, cfg := look(t, url)
	o := status.Options{Store: st, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database, RegistryDir: regDir, Heartbeat: time.Second}
	app, logs := startLoggedApp(t, env("dup-0"), workEntity())
	startApp(t, env("dup-1"), workEntity())
	waitReport(t, o, 30*time.Second, "two ready instances, no duplicate", func(r *status.Report) bool {
		return len(r.Instances) == 2 && r.Instances[0].Ready != nil && *r.Instances[0].Ready && r.Instances[1].Ready != nil && *r.Instances[1].Ready
	})
	if r := collect(t, o); len(r.Duplicates) != 0 {
		t.Fatalf("distinct POD_NAMEs flagged: %+v", r.Duplicates)
	}

	// a second pod with the first one's POD_NAME, in a process of its own
	twin := env("dup-0")
	twin[registry.EnvDir] = regDir
	startChild(t, twin)
	r := waitReport(t, o, 30*time.Second, "the two dup-0 instances flagged", func(r *status.Report) bool {
		n := 0
		for _, in := range r.Instances {
			if in.ReplicaID == "dup-0" && in.Duplicate {
				n++
			}
		}
		return n == 2 && len(r.Duplicates) > 0
	})
	var kinds []string
	for _, d := range r.Duplicates {
		kinds = append(kinds, d.Kind)
		if d.Value != "dup-0" && d.Kind == "replicaId" || len(d.Instances) != 2 {
			t.Errorf("duplicate %+v", d)
		}
	}
	if !strings.Contains(strings.Join(kinds, ","), "replicaId") {
		t.Fatalf("duplicates %+v", r.Duplicates)
	}
	for _, in := range r.Instances {
		if in.ReplicaID == "dup-1" && in.Duplicate {
			t.Fatalf("dup-1 flagged: %+v", in)
		}
	}
	var plain, coloured bytes.Buffer
	_ = status.WriteTable(&plain, r, false)
	_ = status.WriteTable(&coloured, r, true)
	if !strings.Contains(tableLine(plain.String(), "dup-0"), "DUPLICATE") || !strings.Contains(plain.String(), "! DUPLICATE") ||
		!strings.Contains(plain.String(), "POD_NAME") {
		t.Fatalf("not flagged in the table:\n%s", plain.String())
	}
	if !strings.HasPrefix(tableLine(coloured.String(), "dup-0"), status.AnsiRed) || !strings.Contains(coloured.String(), status.AnsiRed+"  ! DUPLICATE") {
		t.Fatalf("not red:\n%s", coloured.String())
	}
	var js bytes.Buffer
	if err := status.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, loadSchema(t), js.Bytes())
	t.Logf("status with a duplicate POD_NAME:\n%s", plain.String())

	// the later twin (the child) is refused readiness, naming the first;
	// the first stays ready
	first := inspectDoc(t, app).RunnerAddress
	waitReport(t, o, 15*time.Second, "the later dup-0 not ready, naming the first; the first ready", func(r *status.Report) bool {
		later, earlier := false, false
		for _, in := range r.Instances {
			if in.ReplicaID != "dup-0" || in.Ready == nil {
				continue
			}
			if in.RunnerAddress == first {
				earlier = *in.Ready
				continue
			}
			for _, p := range in.Problems {
				later = later || (!*in.Ready && p.Kind == "identity" && strings.Contains(p.Detail, "runner "+first) && strings.Contains(p.Detail, "POD_NAME"))
			}
		}
		return later && earlier
	})

	// the instance itself, within a few of its heartbeats: inspect and its log
	var doc inspect.Doc
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if doc = inspectDoc(t, app); doc.Extra["sameReplicaIdRunners"] != "" {
			break
		}
	}
	if doc.Extra["sameReplicaIdRunners"] == "" {
		t.Fatalf("inspect does not name the twin: %+v", doc.Extra)
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="another live instance uses this replica id`) {
		t.Fatalf("the instance's log does not say it:\n%s", logs.String())
	}
	// the binlog server keeps refusing one of the two streams (error 4052):
	// the reader that meets it says why in the CDC column (and its log)
	r = waitReport(t, o, 20*time.Second, "a dup-0 row whose change feed names error 4052", func(r *status.Report) bool {
		for _, in := range r.Instances {
			if in.ReplicaID == "dup-0" && strings.Contains(in.CDCProblem, "error 4052") {
				return true
			}
		}
		return false
	})
	plain.Reset()
	_ = status.WriteTable(&plain, r, false)
	if !strings.Contains(plain.String(), "binlog CDC (ROW) (DEGRADED)") || !strings.Contains(plain.String(), "dup-0 CDC DEGRADED: another replica streams the binlog") {
		t.Fatalf("error 4052 not in the table:\n%s", plain.String())
	}
	if strings.Contains(logs.String(), "error 4052") && !strings.Contains(logs.String(), `level=ERROR msg="binlog stream refused`) {
		t.Fatalf("dup-0 met error 4052 without saying it at Error:\n%s", logs.String())
	}
}

func TestLiveCDCFallbackShownMariaDB(t *testing.T) {
	srv := testdb.StartMariaDBBinlog(t)
	url := srv.Database(t, "fallback")
	srv.Exec(t, "CREATE USER 'norepl'@'%' IDENTIFIED BY 'pw'", "GRANT REPLICATION CLIENT ON *.* TO 'norepl'@'%'")
	regDir := t.TempDir()
	t.Setenv(registry.EnvDir, regDir)
	env := map[string]string{
		"DB_URL": url, "POD_NAME": "fb-0", "VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1",
		"VOLTRO_WORKFLOW_RUNNER_PORT": freePort(t), "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s",
		"VOLTRO_CLUSTER_SECRET": "status-secret", "VOLTRO_SHARDS": "8",
		"VOLTRO_CDC_URL": srv.URL("norepl", "pw", "voltro_t_fallback"),
	}
	_, logs := startLoggedApp(t, env, workEntity())
	st, cfg := look(t, url)
	o := status.Options{Store: st, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database, RegistryDir: regDir, Heartbeat: time.Second}
	r := waitReport(t, o, 30*time.Second, "fb-0 ready", func(r *status.Report) bool {
		return len(r.Instances) == 1 && r.Instances[0].Ready != nil && *r.Instances[0].Ready
	})
	in := r.Instances[0]
	if in.CDCFlavor != "inline emit" || in.Tier != "inline-only" || !strings.Contains(in.CDCProblem, "REPLICATION SLAVE") {
		t.Fatalf("instance: %+v", in)
	}
	var plain bytes.Buffer
	_ = status.WriteTable(&plain, r, false)
	if l := tableLine(plain.String(), "fb-0"); !strings.Contains(l, "inline emit (DEGRADED)") || !strings.Contains(l, "CDC-DEGRADED") ||
		!strings.Contains(plain.String(), "fb-0 CDC DEGRADED: fell back to inline emit") {
		t.Fatalf("the fallback is not in the table:\n%s", plain.String())
	}
	var boot string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "sql dialect resolved") {
			boot = l
		}
	}
	if !strings.Contains(boot, "level=WARN") || !strings.Contains(boot, "REPLICATION SLAVE") {
		t.Fatalf("the boot line does not warn with the reason: %q", boot)
	}
}
