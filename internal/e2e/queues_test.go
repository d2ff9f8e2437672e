package e2e

// Queues across real processes: three runners on one database share a
// queue of Concurrency 5 while one is SIGKILLed and another SIGSTOPped
// past its lease. Every run finishes (no slot leaks with its holder) and
// no more than five runs are ever active at once (no slot is handed out
// twice), judged by the runs' journals: what a fenced writer recorded.

import (
	"context"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
)

// e2eQueue is the queue the runners register.
var e2eQueue = voltro.NewQueue("e2e.q", voltro.QueueOptions{Concurrency: 5})

// queuedJob takes a step, sleeps durably (keeping its slot) and takes
// another.
var queuedJob = voltro.NewWorkflow("e2e.queued", func(wc *voltro.WorkflowContext, n int) (int, error) {
	if _, err := voltro.Step(wc, "enter", func(context.Context) (int, error) { return n, nil }); err != nil {
		return 0, err
	}
	wc.Sleep(100 * time.Millisecond)
	return voltro.Step(wc, "leave", func(context.Context) (int, error) { return n, nil })
})

func TestQueueLimitHoldsThroughFaults(t *testing.T) {
	for _, db := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"postgres", func(t *testing.T) string { return testdb.Postgres(t, "e2e_queue") }},
		{"mariadb", func(t *testing.T) string { return testdb.MariaDB(t, "e2e_queue") }},
	} {
		t.Run(db.name, func(t *testing.T) { testQueueLimitHolds(t, db.url(t)) })
	}
}

func testQueueLimitHolds(t *testing.T, url string) {
	const runs, limit = 300, 5
	env := map[string]string{"DB_URL": url, "E2E_QUEUE": "1", "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "500ms"}
	procs := []*proc{startProc(t, "q-0", env), startProc(t, "q-1", env), startProc(t, "q-2", env)}
	app := client(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hs := make([]*voltro.Handle[int], runs)
	for i := range hs {
		h, err := queuedJob.Start(ctx, app, i, voltro.OnQueue(e2eQueue))
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	d := look(t, url)
	waitFinished := func(n int) {
		t.Helper()
		for {
			done, err := d.ListExecutions(ctx, store.ExecutionFilter{Queue: e2eQueue.Name(), Status: store.ExecCompleted, Limit: runs})
			if err != nil {
				t.Fatal(err)
			}
			if len(done) >= n {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%d of %d runs finished before the deadline", len(done), n)
			}
			time.Sleep(50 * time.Millisecond) // real processes: poll the database
		}
	}
	waitFinished(40)
	procs[0].kill()
	waitFinished(80)
	frozen := procs[1]
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // past its lease (heartbeat 500 ms): its shards move on
	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		if got, err := h.Result(ctx); err != nil || got != i {
			t.Fatalf("run %d (%s): %d, %v", i, h.ID, got, err)
		}
	}
	// each run's active interval, from its journal: the first step's start
	// to the last step's end
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, h := range hs {
		j, err := d.Journal(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		var from, to time.Time
		for _, e := range j {
			switch e.Name {
			case "enter":
				from = e.StartedAt
			case "leave":
				to = e.FinishedAt
			}
		}
		if from.IsZero() || to.IsZero() || to.Before(from) {
			t.Fatalf("run %s: journal without its interval: %+v", h.ID, j)
		}
		edges = append(edges, edge{from, +1}, edge{to, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta // an end before a start at the same instant
	})
	active, most := 0, 0
	for _, e := range edges {
		active += e.delta
		most = max(most, active)
	}
	if most > limit {
		t.Fatalf("%d runs were active at once, the queue's limit is %d", most, limit)
	}
	if most < limit {
		t.Fatalf("at most %d runs were active at once: the limit of %d was never reached, so the check proves little", most, limit)
	}
	t.Logf("%d runs, at most %d active at once (limit %d), through a SIGKILL and a SIGSTOP of %s", runs, most, limit, 5*time.Second)
}
