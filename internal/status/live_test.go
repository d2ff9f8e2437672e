package status_test

// Against live databases. PostgreSQL: three in-process instances and one
// child process, each hosting status.work and status.wait — the table and the JSON, the
// --process filter, a runner advertising localhost, a SIGKILLed instance
// turning stale within one heartbeat expiry, and a drain stalled on an
// entity type nobody hosts. MariaDB with a binlog: the server_id column.

import (
	"bytes"
	"context"
	"fmt"
	"github.com/voltro/voltro/internal/status"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/testdb"
)

func TestLivePostgres(t *testing.T) {
	url := testdb.Postgres(t, "status_live")
	regDir := t.TempDir()
	t.Setenv(registry.EnvDir, regDir) // startApp passes these through to the app
	t.Setenv(registry.EnvProcess, "status-app")
	host := loopbackName(t)
	if host == "" {
		t.Fatal("this test needs the machine's hostname to resolve to loopback only (as /etc/hosts does here), so runners can advertise a name other than localhost without sending traffic off 127.0.0.0/8")
	}
	env := func(name, runnerHost string) map[string]string {
		return map[string]string{
			"DB_URL": url, "POD_NAME": name, "VOLTRO_WORKFLOW_RUNNER_HOST": runnerHost,
			"VOLTRO_WORKFLOW_RUNNER_PORT": freePort(t), "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s",
			"VOLTRO_CLUSTER_SECRET": "status-secret", "VOLTRO_SHARDS": "24",
		}
	}
	tick := voltro.NewSchedule("status.tick", "@every 1s", func(context.Context, time.Time) error { return nil }, voltro.Coordination("advisoryLock"))
	wait := waitWorkflow()
	a := startApp(t, env("status-a", host), workEntity(), tick, wait)
	startApp(t, env("status-b", host), workEntity(), tick, wait)
	startApp(t, env("status-c", "localhost"), workEntity(), tick, wait)
	childEnv := env("status-d", host)
	childEnv[registry.EnvDir], childEnv[registry.EnvProcess] = regDir, "status-child"
	d := startChild(t, childEnv)

	ctx := context.Background()
	if _, err := wait.Start(ctx, a, 1, voltro.WithKey("status-wait-1")); err != nil {
		t.Fatal(err)
	}
	st, cfg := look(t, url)
	o := status.Options{Store: st, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database, RegistryDir: regDir, Heartbeat: time.Second}

	// Everyone serves, holds shards, and schedules and the workflow show.
	r := waitReport(t, o, 30*time.Second, "four ready instances owning shards, schedule activity, a suspended run", func(r *status.Report) bool {
		if len(r.Instances) != 4 || r.Shared == nil || r.Shared.Schedules == nil || len(r.Shared.Schedules.ActiveReplicas) == 0 ||
			r.Shared.Workflows == nil || r.Shared.Workflows.Suspended != 1 {
			return false
		}
		for _, in := range r.Instances {
			if !in.Reachable || in.Ready == nil || !*in.Ready || in.OwnedShards == 0 {
				return false
			}
		}
		return true
	})
	if r.Source.Kind != "runners" || r.StaleAfterSeconds != 3 {
		t.Fatalf("source %+v, stale after %v", r.Source, r.StaleAfterSeconds)
	}
	total := 0
	for _, in := range r.Instances {
		total += in.OwnedShards
		wantCoord := "advisoryLock"
		if in.ReplicaID == "status-d" {
			wantCoord = "none" // the child registers no schedule
		}
		if in.Dialect != "postgres" || in.Tier != "full" || in.CDCFlavor != "LISTEN/NOTIFY" || in.ShardLock != "advisory" ||
			!strings.Contains(in.ShardLockReason, "advisory locks") ||
			in.Coordination != wantCoord || in.BinlogServerID != nil || in.OwnedShardsSource != "inspect" ||
			in.Stale || in.HeartbeatAgeSeconds == nil || *in.HeartbeatAgeSeconds > 3 || in.Source != "runners" {
			t.Errorf("instance %s: %+v", in.ReplicaID, in)
		}
		wantProcess := "status-app"
		if in.ReplicaID == "status-d" {
			wantProcess = "status-child"
		}
		// the runner row's meta names the process; the registry agrees
		if in.Process != wantProcess || (in.ProcessSource != "meta" && in.ProcessSource != "registry") || in.PID == 0 {
			t.Errorf("instance %s: process %q from %s, pid %d; want %s", in.ReplicaID, in.Process, in.ProcessSource, in.PID, wantProcess)
		}
		wantRisk := in.ReplicaID == "status-c" || host == "127.0.0.1"
		if in.LocalhostRisk != wantRisk || (wantRisk && in.LocalhostFix == "") {
			t.Errorf("instance %s advertises %s: localhostRisk %v", in.ReplicaID, in.RunnerAddress, in.LocalhostRisk)
		}
	}
	if total > 24 {
		t.Errorf("instances claim %d of 24 shards", total)
	}
	if e := r.Shared.Errors; len(e) > 0 {
		t.Errorf("shared state errors: %v", e)
	}
	if s := r.Shared.Schedules; s.RecentClaims == 0 || len(s.LatestClaims) != 1 || s.LatestClaims[0].Schedule != "status.tick" {
		t.Errorf("schedule claims: %+v", s)
	}

	// The retention in force: the default, swept by the one instance that
	// holds the retention shard (its first look comes within 5 s).
	r = waitReport(t, o, 15*time.Second, "one sweeping instance, named", func(r *status.Report) bool {
		n := 0
		for _, in := range r.Instances {
			if in.Retention != nil && in.Retention.Sweeping {
				n++
			}
		}
		return n == 1 && r.Retention != nil && r.Retention.SweptBy != nil
	})
	if rt := r.Retention; rt.Runs != "7d" || rt.DeadLetters != "30d" || rt.RunsSeconds != 604800 || len(rt.Differ) != 0 {
		t.Errorf("retention in force: %+v", rt)
	}
	for _, in := range r.Instances {
		if in.Retention == nil {
			t.Errorf("instance %s reports no retention", in.ReplicaID)
		}
	}

	// The table, plain and coloured, and the JSON.
	var plain, coloured, js bytes.Buffer
	if err := status.WriteTable(&plain, r, false); err != nil {
		t.Fatal(err)
	}
	if err := status.WriteTable(&coloured, r, true); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"status-a", "status-b", "status-c", "status-d"} {
		if tableLine(plain.String(), name) == "" {
			t.Fatalf("no table line for %s:\n%s", name, plain.String())
		}
	}
	cLine := tableLine(plain.String(), "status-c")
	if !strings.Contains(cLine, "LOCALHOST") || !strings.Contains(plain.String(), "VOLTRO_WORKFLOW_RUNNER_HOST") {
		t.Fatalf("the localhost runner is not marked in text:\n%s", plain.String())
	}
	if !strings.HasPrefix(tableLine(coloured.String(), "status-c"), status.AnsiRed) {
		t.Fatalf("the localhost runner is not red:\n%s", coloured.String())
	}
	if host != "127.0.0.1" && strings.Contains(tableLine(plain.String(), "status-a"), "LOCALHOST") {
		t.Fatalf("a routable runner marked localhost:\n%s", plain.String())
	}
	if err := status.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, loadSchema(t), js.Bytes())
	if !strings.Contains(plain.String(), "retention: finished runs and processed messages 7d, dead letters 30d; swept by ") {
		t.Errorf("the table does not state the retention in force:\n%s", plain.String())
	}
	t.Logf("status:\n%s", plain.String())

	// --process: by process name, by replica id, and no match.
	for filter, want := range map[string]int{"status-child": 1, "status-b": 1, "status-app": 3, "nobody": 0} {
		fo := o
		fo.Process = filter
		fr := collect(t, fo)
		if len(fr.Instances) != want || fr.ProcessFilter != filter {
			t.Errorf("--process %s: %d instances, want %d", filter, len(fr.Instances), want)
		}
	}

	// SIGKILL the child: stale (and unreachable) within one heartbeat expiry.
	d.kill()
	killed := time.Now()
	r = waitReport(t, o, 10*time.Second, "the killed instance shown stale", func(r *status.Report) bool { return byReplica(r)["status-d"].Stale })
	if took := time.Since(killed); took > 3*time.Second+1500*time.Millisecond {
		t.Errorf("the killed instance turned stale %s after SIGKILL; expiry is 3s", took)
	}
	dead := byReplica(r)["status-d"]
	if dead.Reachable || dead.UnreachableReason == "" || !strings.Contains(dead.StaleReason, "heartbeat") || dead.Process != "status-child" {
		t.Fatalf("killed instance: %+v", dead)
	}
	var table bytes.Buffer
	_ = status.WriteTable(&table, r, false)
	if l := tableLine(table.String(), "status-d"); !strings.Contains(l, "STALE") || !strings.Contains(l, "UNREACHABLE") {
		t.Fatalf("the killed instance's line: %q", l)
	}
	_, local, err := status.Collect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := registry.Prune(local); err != nil || n != 1 {
		t.Fatalf("pruned %d registry entries (%v); want the killed child's", n, err)
	}

	// A message for a type nobody hosts: a cluster condition in the
	// shared state; every live instance stays ready.
	nobody := voltro.NewEntity("status.nobody", func(context.Context, string, int) (int, error) { return 0, nil })
	if err := nobody.Send(ctx, a, "n1", 1); err != nil {
		t.Fatal(err)
	}
	waitReport(t, o, 15*time.Second, "the unhosted backlog in the shared state", func(r *status.Report) bool {
		u := r.Shared.Messages.UnhostedBacklog
		return len(u) == 1 && u[0].EntityType == "status.nobody" && u[0].Messages == 1
	})
	time.Sleep(2 * time.Second) // readiness used to turn red at once
	r = collect(t, o)
	for _, name := range []string{"status-a", "status-b", "status-c"} {
		if in := byReplica(r)[name]; in.Ready == nil || !*in.Ready || len(in.Problems) > 0 {
			t.Fatalf("%s must stay ready for a backlog nobody hosts: %+v", name, in)
		}
	}
	table.Reset()
	_ = status.WriteTable(&table, r, false)
	if !strings.Contains(table.String(), "unhosted backlog: 1 message(s) for status.nobody") || !strings.Contains(table.String(), "voltro messages dead --type status.nobody") {
		t.Fatalf("the footer does not name the unhosted backlog and its way out:\n%s", table.String())
	}
	if r.Shared.Messages.OldestUndeliveredSeconds <= 0 {
		t.Errorf("oldest undelivered: %+v", r.Shared.Messages)
	}
	js.Reset()
	if err := status.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, loadSchema(t), js.Bytes())
	t.Logf("status with an unhosted backlog:\n%s", table.String())
}

// On MariaDB with the binary log on, the row carries the binlog reader's
// server_id and the full tier.
func TestLiveMariaDBBinlog(t *testing.T) {
	url := testdb.MariaDBBinlog(t)
	regDir := t.TempDir()
	t.Setenv(registry.EnvDir, regDir)
	env := map[string]string{
		"DB_URL": url, "POD_NAME": "status-maria-0", "VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1",
		"VOLTRO_WORKFLOW_RUNNER_PORT": freePort(t), "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s",
		"VOLTRO_CLUSTER_SECRET": "status-secret", "VOLTRO_SHARDS": "8",
	}
	startApp(t, env, workEntity())
	st, cfg := look(t, url)
	o := status.Options{Store: st, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database, RegistryDir: regDir, Heartbeat: time.Second}
	r := waitReport(t, o, 30*time.Second, "the MariaDB instance ready", func(r *status.Report) bool {
		return len(r.Instances) == 1 && r.Instances[0].Ready != nil && *r.Instances[0].Ready
	})
	in := r.Instances[0]
	if in.BinlogServerID == nil || *in.BinlogServerID == 0 || in.Tier != "full" || in.CDCFlavor != "binlog CDC (ROW)" ||
		in.Dialect != "mariadb" || !in.LocalhostRisk || in.OwnedShards != 8 {
		t.Fatalf("MariaDB instance: %+v", in)
	}
	var table bytes.Buffer
	if err := status.WriteTable(&table, r, false); err != nil {
		t.Fatal(err)
	}
	if l := tableLine(table.String(), "status-maria-0"); !strings.Contains(l, fmt.Sprint(*in.BinlogServerID)) {
		t.Fatalf("server_id not in the row: %q", l)
	}
	if r.Shared == nil || len(r.Shared.Errors) > 0 {
		t.Fatalf("shared state: %+v", r.Shared)
	}
	var js bytes.Buffer
	if err := status.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, loadSchema(t), js.Bytes())
}
