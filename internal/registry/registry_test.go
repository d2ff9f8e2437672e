package registry

// Entries on disk (write, list, stale, prune), and discovery from runner
// rows and entries (internal/config resolves the directory and the process
// name).

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// deadPID is the id of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestWriteListPrune(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reg")
	live := Entry{ReplicaID: "api/0 x", PID: os.Getpid(), Process: "api", Dialect: "sqlite", Database: "/data/app.db",
		InspectAddr: "127.0.0.1:9000", RunnerAddress: "local:api/0 x", Started: time.Now().UTC().Truncate(time.Second)}
	path, err := Write(dir, live)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "api_0_x-"+strconv.Itoa(os.Getpid())+".json" {
		t.Fatalf("file name %q", filepath.Base(path))
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode: %v %v", st.Mode(), err)
	}
	dead := live
	dead.ReplicaID, dead.PID = "api-9", deadPID(t)
	deadPath, err := Write(dir, dead)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	ls, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 3 {
		t.Fatalf("listed %d entries: %+v", len(ls), ls)
	}
	byPath := map[string]Listed{}
	for _, l := range ls {
		byPath[l.Path] = l
	}
	if l := byPath[path]; l.Stale || l.Entry != live {
		t.Fatalf("live entry read back as %+v", l)
	}
	if l := byPath[deadPath]; !l.Stale || l.StaleReason == "" {
		t.Fatalf("the entry of a gone process is not stale: %+v", l)
	}
	if l := byPath[filepath.Join(dir, "junk.json")]; !l.Stale {
		t.Fatalf("an unreadable entry is not stale: %+v", l)
	}
	n, err := Prune(ls)
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	ls, _ = List(dir)
	if len(ls) != 1 || ls[0].Path != path {
		t.Fatalf("after prune: %+v", ls)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Fatalf("removing twice: %v", err)
	}
	if ls, err := List(filepath.Join(dir, "missing")); err != nil || len(ls) != 0 {
		t.Fatalf("a missing directory: %v %v", ls, err)
	}
}

func TestMeta(t *testing.T) {
	m := RunnerMeta{Process: "api", PID: 7, Host: "node-1", Inputs: map[string]json.RawMessage{"workflow/w": json.RawMessage(`{"type":"object"}`)}}
	if got := ParseMeta(m.Encode()); !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip: %+v", got)
	}
	if s := (RunnerMeta{Process: "api"}).Encode(); s != `{"process":"api"}` {
		t.Fatalf("no inputs, no key: %s", s)
	}
	for _, bad := range []string{"", "  ", "not json", `["x"]`} {
		if got := ParseMeta(bad); !reflect.DeepEqual(got, RunnerMeta{}) {
			t.Fatalf("ParseMeta(%q) = %+v", bad, got)
		}
	}
}

func TestFromRunners(t *testing.T) {
	rows := []store.Runner{
		{Address: "10.0.0.1:34000", ReplicaID: "api-0", InspectAddr: "127.0.0.1:9001", Meta: `{"process":"api","pid":11}`, HeartbeatAge: time.Second, Healthy: true},
		{Address: "10.0.0.2:34000", ReplicaID: "api-1", InspectAddr: "127.0.0.1:9002", HeartbeatAge: 2 * time.Second},
		{Address: "10.0.0.3:34000", ReplicaID: "api-2", InspectAddr: "127.0.0.1:9003"},
	}
	local := []Listed{
		{Entry: Entry{ReplicaID: "api-1", PID: 22, Process: "api-local", Dialect: "postgres", Database: "shop", InspectAddr: "127.0.0.1:9002"}},
		{Entry: Entry{ReplicaID: "api-2", PID: 33, Process: "other-db", Dialect: "postgres", Database: "elsewhere", InspectAddr: "127.0.0.1:9003"}},
	}
	got := FromRunners(rows, "postgres", "shop", local)
	want := []struct {
		process, source string
		pid             int
	}{
		{"api", ProcessFromMeta, 11},
		{"api-local", ProcessFromRegistry, 22},
		{"api-2", ProcessFromReplica, 0},
	}
	for i, w := range want {
		g := got[i]
		if g.Process != w.process || g.ProcessSource != w.source || g.PID != w.pid || g.Source != SourceRunners || !g.HasHeartbeat {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
	if got[1].Entry == nil || got[2].Entry != nil {
		t.Fatal("entries matched to the wrong rows")
	}
}

func TestFromEntries(t *testing.T) {
	local := []Listed{
		{Entry: Entry{ReplicaID: "b", PID: 2, Process: "web", Dialect: "sqlite", Database: "/d/app.db", RunnerAddress: "local:b"}},
		{Entry: Entry{ReplicaID: "a", PID: 1, Process: "web", Dialect: "sqlite", Database: "/d/app.db", RunnerAddress: "local:a"}, Stale: true, StaleReason: "gone"},
		{Entry: Entry{ReplicaID: "c", PID: 3, Process: "", Dialect: "memory", RunnerAddress: "local:c"}},
		{Entry: Entry{ReplicaID: "d", PID: 4, Process: "web", Dialect: "sqlite", Database: "/d/other.db"}},
	}
	rows := []store.Runner{{Address: "local:b", ReplicaID: "b", HeartbeatAge: 300 * time.Millisecond, EntityTypes: []string{"t"}}}
	got := FromEntries(local, "sqlite", "/d/app.db", rows)
	if len(got) != 2 || got[0].ReplicaID != "a" || got[1].ReplicaID != "b" {
		t.Fatalf("sqlite /d/app.db: %+v", got)
	}
	if !got[0].Stale || got[0].HasHeartbeat || !got[1].HasHeartbeat || got[1].HeartbeatAge != 300*time.Millisecond {
		t.Fatalf("staleness or heartbeat wrong: %+v", got)
	}
	all := FromEntries(local, "", "", nil)
	if len(all) != 4 {
		t.Fatalf("every entry: %+v", all)
	}
	for _, in := range all {
		if in.ReplicaID == "c" && (in.Process != "c" || in.ProcessSource != ProcessFromReplica) {
			t.Fatalf("an entry without a process name: %+v", in)
		}
	}
}
