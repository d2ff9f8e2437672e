package e2e

// Single-process runner storage on a shared PostgreSQL database
// (VOLTRO_WORKFLOW_RUNNER_STORAGE=memory): two instances write no runner
// row and take no advisory lock, each executes only the runs it started,
// and one killed and restarted with the same POD_NAME resumes its own.

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

func TestSingleProcessRunnerStorage(t *testing.T) {
	url := testdb.Postgres(t, "e2e_private")
	ctx := context.Background()
	env := func(pod, chains string) map[string]string {
		return map[string]string{"DB_URL": url, "VOLTRO_WORKFLOW_RUNNER_STORAGE": "memory", "POD_NAME": pod, "E2E_CHAINS": chains,
			"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s"}
	}
	a := startProc(t, "solo-a", env("solo-a", "10"))
	b := startProc(t, "solo-b", env("solo-b", "10"))
	ids := func(p *proc) []string {
		var out []string
		for _, l := range p.output() {
			if id, ok := strings.CutPrefix(l, "CHAIN "); ok {
				out = append(out, id)
			}
		}
		return out
	}
	runsA, runsB := ids(a), ids(b)
	if len(runsA) != 10 || len(runsB) != 10 {
		t.Fatalf("started %d and %d runs, want 10 each", len(runsA), len(runsB))
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows, locks int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM voltro_runners`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&locks); err != nil {
		t.Fatal(err)
	}
	if rows != 0 || locks != 0 {
		t.Fatalf("single-process runner storage wrote %d runner rows and holds %d advisory locks; want none", rows, locks)
	}
	time.Sleep(400 * time.Millisecond) // mid-run
	killed := a.kill()
	startProc(t, "solo-a", env("solo-a", "0")) // resumes solo-a's runs; stopped by cleanup
	d := look(t, url)
	ws := store.Workflows(d)
	done := func(id string) bool {
		x, err := ws.GetExecution(ctx, id)
		return err == nil && x.Status == store.ExecCompleted
	}
	testwait.For(t, 60*time.Second, "every run completes", func() bool {
		for _, id := range append(append([]string(nil), runsA...), runsB...) {
			if !done(id) {
				return false
			}
		}
		return true
	})
	resumed := 0
	for pod, runs := range map[string][]string{"local:solo-a": runsA, "local:solo-b": runsB} {
		for _, id := range runs {
			j, err := ws.Journal(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			after := false
			for _, e := range j {
				if e.Runner != pod {
					t.Fatalf("run %s started on %s was executed by %s", id, pod, e.Runner)
				}
				after = after || e.StartedAt.After(killed)
			}
			if pod == "local:solo-a" && after {
				resumed++
			}
		}
	}
	if resumed == 0 {
		t.Fatal("no run of the killed instance ran a step after the restart: the kill came too late to mean anything")
	}
	// No runner row, yet `cluster status` shows both, found through the
	// local registry, as single-process.
	code, out, errOut := cli(t, map[string]string{"DB_URL": url}, "cluster", "status", "--format", "json")
	var rep struct {
		Instances []struct{ ReplicaID, Tier, RunnerAddress string }
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("cluster status: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	seen := map[string]string{}
	for _, in := range rep.Instances {
		seen[in.ReplicaID] = in.Tier + " " + in.RunnerAddress
	}
	for _, pod := range []string{"solo-a", "solo-b"} {
		if seen[pod] != "single-process local:"+pod {
			t.Fatalf("cluster status shows %s as %q, want single-process at local:%s; instances: %v", pod, seen[pod], pod, seen)
		}
	}
	t.Logf("%d runs of the killed instance resumed after its restart with the same POD_NAME; none ran elsewhere", resumed)
}
