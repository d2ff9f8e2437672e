package e2e

// A rolling deploy that changes a workflow, with two binaries built from
// different code (testdata/rolling, v1 and -tags v2) on PostgreSQL: a run
// charged under v1 is mid-flight when v2 joins; both serve at once; v1
// leaves; the old run completes on v2 with v1's branch, new runs take v2's.

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

func buildRolling(t *testing.T, out string, tags ...string) string {
	t.Helper()
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, "./testdata/rolling")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, b)
	}
	return out
}

func TestRollingDeployPatched(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	v1 := buildRolling(t, filepath.Join(dir, "rolling-v1"))
	v2 := buildRolling(t, filepath.Join(dir, "rolling-v2"), "v2")
	url := testdb.Postgres(t, "e2e_rolling")
	env := map[string]string{"DB_URL": url, "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s"}
	old := startBinary(t, "rolling-v1", exec.Command(v1), nil, env)

	c, err := voltro.NewClient(ctx, voltro.WithEnv(func(k string) string {
		return map[string]string{"DB_URL": url, "VOLTRO_CLUSTER_SECRET": "e2e-secret"}[k]
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	suspended := func(id string) {
		testwait.For(t, 60*time.Second, id+" to wait for its ship signal", func() bool {
			st, err := c.Get(ctx, id)
			return err == nil && st.Status == voltro.StatusSuspended
		})
	}
	ship := func(id string) string {
		if _, err := c.Signal(ctx, id, "ship", true); err != nil {
			t.Fatal(err)
		}
		out, err := voltro.GetHandle[string](c, id).Result(ctx)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return out
	}
	inFlight, err := c.StartWorkflow(ctx, "rolling.charge", 10, voltro.WithKey("in-flight"))
	if err != nil {
		t.Fatal(err)
	}
	suspended(inFlight) // charged under v1

	d := look(t, url)
	next := startBinary(t, "rolling-v2", exec.Command(v2), nil, env)
	testwait.For(t, 60*time.Second, "v1 and v2 to serve shards at once", func() bool {
		o := owners(t, d)
		return o[old.addr] > 0 && o[next.addr] > 0
	})
	old.term()
	testwait.For(t, 60*time.Second, "v2 to take every shard v1 handed over", func() bool {
		o := owners(t, d)
		return o[old.addr] == 0 && len(o) == 1 && o[next.addr] > 0
	})
	if got := ship(inFlight); got != "v1 branch, total 10, shipped by v2" {
		t.Fatalf("the run charged under v1 must finish on v2 with v1's branch: %q", got)
	}
	fresh, err := c.StartWorkflow(ctx, "rolling.charge", 10, voltro.WithKey("fresh"))
	if err != nil {
		t.Fatal(err)
	}
	suspended(fresh)
	if got := ship(fresh); got != "v2 branch, total 20, shipped by v2" {
		t.Fatalf("a run started after the deploy must take v2's branch: %q", got)
	}
}
