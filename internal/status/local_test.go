package status_test

// Single-process stores: instances on SQLite and on the memory store are
// found through the local registry directory; the entry of a process that
// died is shown stale and pruned; Close removes an instance's entry.

import (
	"context"
	"github.com/voltro/voltro/internal/status"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/registry"
)

func TestLocalRegistry(t *testing.T) {
	regDir := t.TempDir()
	t.Setenv(registry.EnvDir, regDir)
	t.Setenv(registry.EnvProcess, "status-local")
	dbFile := filepath.Join(t.TempDir(), "app.db")
	lite := startApp(t, map[string]string{"DB_URL": "sqlite:" + dbFile, "POD_NAME": "status-lite", "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s"}, workEntity())
	startApp(t, map[string]string{"DB_URL": "memory:", "POD_NAME": "status-mem"}, workEntity())

	// A process that died without closing left its entry behind.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	ghostPath, err := registry.Write(regDir, registry.Entry{ReplicaID: "status-ghost", PID: gone.Process.Pid, Process: "status-local",
		Dialect: "sqlite", Database: dbFile, InspectAddr: "127.0.0.1:1", RunnerAddress: "local:status-ghost", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}

	st, cfg := look(t, "sqlite:"+dbFile)
	o := status.Options{Store: st, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database, RegistryDir: regDir, Heartbeat: time.Second}
	r := waitReport(t, o, 15*time.Second, "the SQLite instance ready, its runner row written", func(r *status.Report) bool {
		in := byReplica(r)["status-lite"]
		return len(r.Instances) == 2 && in.Ready != nil && *in.Ready && in.HeartbeatAgeSeconds != nil
	})
	if r.Source.Kind != "registry" {
		t.Fatalf("source %+v", r.Source)
	}
	in := byReplica(r)["status-lite"]
	if in.Tier != "single-process" || in.Dialect != "sqlite" || in.Process != "status-local" || in.PID != os.Getpid() ||
		!in.Reachable || in.Stale || in.LocalhostRisk || in.Source != "registry" || in.OwnedShards == 0 || in.HeartbeatAgeSeconds == nil {
		t.Fatalf("SQLite instance: %+v", in)
	}
	ghost := byReplica(r)["status-ghost"]
	if !ghost.Stale || ghost.Reachable || !strings.Contains(ghost.StaleReason, "gone") {
		t.Fatalf("the dead process's entry: %+v", ghost)
	}
	if r.Shared == nil || r.Shared.Schedules != nil || len(r.Shared.Errors) > 0 {
		t.Fatalf("SQLite shared state: %+v", r.Shared)
	}
	var js strings.Builder
	if err := status.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, loadSchema(t), []byte(js.String()))

	// Without DB_URL: every local instance, whatever its database.
	all := collect(t, status.Options{RegistryDir: regDir, Heartbeat: time.Second})
	if len(all.Instances) != 3 || all.Shared != nil {
		t.Fatalf("every local instance: %+v", all.Instances)
	}
	if mem := byReplica(all)["status-mem"]; mem.Tier != "none" || mem.Dialect != "memory" || !mem.Reachable {
		t.Fatalf("memory instance: %+v", mem)
	}
	var table strings.Builder
	if err := status.WriteTable(&table, all, false); err != nil {
		t.Fatal(err)
	}
	if l := tableLine(table.String(), "status-ghost"); !strings.Contains(l, "STALE") {
		t.Fatalf("the ghost's line: %q\n%s", l, table.String())
	}
	t.Logf("local instances:\n%s", table.String())

	// The status command prunes what it showed stale.
	_, local, err := status.Collect(context.Background(), status.Options{RegistryDir: regDir})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := registry.Prune(local); err != nil || n != 1 {
		t.Fatalf("pruned %d (%v)", n, err)
	}
	if _, err := os.Stat(ghostPath); !os.IsNotExist(err) {
		t.Fatalf("the ghost's entry is still there: %v", err)
	}

	// Close removes the instance's own entry.
	if err := lite.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	left, err := registry.List(regDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].ReplicaID != "status-mem" {
		t.Fatalf("after closing the SQLite instance the registry holds %+v", left)
	}
}
