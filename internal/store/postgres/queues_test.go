// The queue behaviour particular to PostgreSQL: Dequeue's two ways of
// reading the heads agree, read the queue through its indexes (and leave
// unqueued runs out of them), wake the shard's holder, and stay
// serialized whatever the database's default isolation.
package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/testdb"
)

// heads runs a heads statement and returns its run ids ("-" for the row
// that says the queue has too many partitions to walk).
func heads(t *testing.T, s *postgres.Store, q string, args ...any) []string {
	t.Helper()
	rows, err := s.Pool().Query(ctxT(t), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, name, shard, part, owner *string
		if err := rows.Scan(&id, &name, &shard, &part, &owner); err != nil {
			t.Fatal(err)
		}
		if id == nil {
			out = append(out, "-")
			continue
		}
		out = append(out, *id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDequeueHeadsAgree: walking the partitions and ranking the whole
// queue pick the same runs in the same order, for every limit.
func TestDequeueHeadsAgree(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, testdb.Postgres(t, "pgqheads"))
	ownShard(t, s, "a:1", "default/1")
	ownShard(t, s, "b:1", "default/2")
	rng := rand.New(rand.NewPCG(1, 2))
	var reqs []store.StartRequest
	for i := range 300 {
		x := store.Execution{ID: fmt.Sprintf("r%03d", i), Name: "order", Shard: fmt.Sprintf("default/%d", 1+rng.IntN(3)),
			Queue: "q", Partition: fmt.Sprintf("p%d", rng.IntN(12)), Priority: rng.IntN(3)}
		if rng.IntN(8) == 0 {
			x.Partition = ""
		}
		if rng.IntN(10) == 0 {
			x.StartAt = time.Now().Add(time.Hour)
		}
		reqs = append(reqs, store.StartRequest{Exec: x})
	}
	// one at a time: creation order is the ids' order
	for _, r := range reqs {
		if _, _, _, err := s.StartExecution(ctx, r.Exec, store.StartContext{}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	parts := []string{"p0", "p1", "p2", ""}
	held := []int64{1, 2, 3, 1}
	for _, byOwner := range []bool{false, true} {
		for _, pc := range []int{0, 1, 2, 4} {
			for _, limit := range []any{1, 3, 10, 50, nil} {
				args := []any{"q", pc, 0, parts, held, limit}
				if byOwner {
					args = []any{"q", pc, 1, parts, held, limit, []string{"a:1"}, []int64{1}}
				}
				walk := heads(t, s, postgres.HeadsSQL(true, byOwner), args...)
				rank := heads(t, s, postgres.HeadsSQL(false, byOwner), args...)
				if !slices.Equal(walk, rank) || len(rank) == 0 {
					t.Fatalf("byOwner=%v pc=%d limit=%v:\nwalk %v\nrank %v", byOwner, pc, limit, walk, rank)
				}
			}
		}
	}
}

// TestDequeueManyPartitions: past the partitions a dequeue walks, it
// ranks the whole queue, and still takes each partition's first run, the
// oldest first.
func TestDequeueManyPartitions(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, testdb.Postgres(t, "pgqmany"))
	var reqs []store.StartRequest
	for i := range postgres.HeadsWalkMax + 1 {
		for j := range 2 {
			reqs = append(reqs, store.StartRequest{Exec: store.Execution{ID: fmt.Sprintf("r%04d-%d", i, j), Name: "order", Shard: "default/1",
				Queue: "q", Partition: fmt.Sprintf("p%04d", postgres.HeadsWalkMax-i)}})
		}
	}
	for i := 0; i < len(reqs); i += 200 {
		out, err := s.StartExecutions(ctx, reqs[i:min(i+200, len(reqs))])
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
		}
	}
	if got := heads(t, s, postgres.HeadsSQL(true, false), "q", 0, 0, []string{}, []int64{}, 3); fmt.Sprint(got) != "[-]" {
		t.Fatalf("a walk past %d partitions: %v", postgres.HeadsWalkMax, got)
	}
	if _, err := s.PutQueue(ctx, store.QueueLimits{Name: "q", PartitionConcurrency: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "q", Max: 3})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range got {
		ids = append(ids, g.ExecutionID)
	}
	// the batch's starts share a created_at or not: the order is by
	// creation, then id, either way
	if fmt.Sprint(ids) != "[r0000-0 r0001-0 r0002-0]" {
		t.Fatalf("dequeued %v", ids)
	}
}

// planNodes flattens an EXPLAIN (FORMAT JSON) plan into "type relation
// index" lines.
func planNodes(t *testing.T, s *postgres.Store, q string, args ...any) []string {
	t.Helper()
	var raw []byte
	if err := s.Pool().QueryRow(ctxT(t), `EXPLAIN (FORMAT JSON) `+q, args...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plans []struct{ Plan map[string]any }
	if err := json.Unmarshal(raw, &plans); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		out = append(out, fmt.Sprint(n["Node Type"], " ", n["Relation Name"], " ", n["Index Name"]))
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			walk(k.(map[string]any))
		}
	}
	walk(plans[0].Plan)
	return out
}

// TestQueuePlans: the queue statements read the queue's runs through the
// queue indexes, and runs started on no queue are in neither of them.
func TestQueuePlans(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, testdb.Postgres(t, "pgqplans"))
	now := time.Now()
	if err := s.SeedHistory(ctx, store.HistorySeed{N: 40000, Name: "order", Shards: []string{"default/1", "default/2"},
		From: now.Add(-time.Hour), To: now}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`SELECT pg_relation_size('voltro_workflow_executions_queue') + pg_relation_size('voltro_workflow_executions_dequeued')`,
	} {
		var size int64
		if err := s.Pool().QueryRow(ctx, q).Scan(&size); err != nil || size > 2*16384 {
			t.Fatalf("the queue indexes after 40000 unqueued runs: %d bytes, %v", size, err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO voltro_workflow_executions
			(id, name, shard, status, queue, partition_key, priority, created_at, updated_at, dequeued_at)
		SELECT 'q' || i, 'order', 'default/' || (i % 4),
			CASE i % 10 WHEN 0 THEN 'running' WHEN 1 THEN 'completed' ELSE 'queued' END,
			'q' || (i % 3), 't' || (i % 40), i % 2, now() - i * interval '1 ms', now(),
			CASE WHEN i % 10 < 2 THEN now() - i * interval '1 ms' END
		FROM generate_series(1, 15000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE voltro_workflow_executions`); err != nil {
		t.Fatal(err)
	}
	none, held := []string{}, []int64{}
	for _, c := range []struct {
		name, sql, index string
		args             []any
	}{
		{"heads (walk)", postgres.HeadsSQL(true, false), "voltro_workflow_executions_queue", []any{"q1", 0, 0, none, held, 10}},
		{"heads (walk, workers)", postgres.HeadsSQL(true, true), "voltro_workflow_executions_queue",
			[]any{"q1", 2, 3, []string{"t1"}, []int64{1}, 74, none, held}},
		{"heads (rank)", postgres.HeadsSQL(false, false), "voltro_workflow_executions_queue", []any{"q1", 0, 0, none, held, 10}},
		{"slots", postgres.SQLQueueSlots, "", []any{"q1", 60000}},
		{"stats", postgres.SQLQueueStats, "", []any{"q1"}},
	} {
		nodes := planNodes(t, s, c.sql, c.args...)
		plan := strings.Join(nodes, "\n")
		if strings.Contains(plan, "Seq Scan voltro_workflow_executions") {
			t.Errorf("%s reads the whole executions table:\n%s", c.name, plan)
		}
		if c.index != "" && !strings.Contains(plan, c.index) {
			t.Errorf("%s does not use %s:\n%s", c.name, c.index, plan)
		}
	}
}

// TestDequeueWakes: the start message of a dequeued run wakes its shard's
// holder at the commit, as any enqueue does.
func TestDequeueWakes(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, testdb.Postgres(t, "pgqwake"))
	w := listen(t, s)
	listening(t, s.DB())
	if _, _, _, err := s.StartExecution(ctx, store.Execution{ID: "r1", Name: "order", Shard: "default/3", Queue: "q"}, store.StartContext{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutQueue(ctx, store.QueueLimits{Name: "q", Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "q"})
	if err != nil || len(got) != 1 {
		t.Fatalf("dequeue: %+v %v", got, err)
	}
	w.await(t, "the dequeued run's start", func(wk store.Wake) bool {
		return wk.Kind == store.WakeMessage && wk.ID == got[0].MessageID && wk.Shard == "default/3"
	})
}

// TestDequeueIsolation: with the database's default isolation at
// REPEATABLE READ, a dequeue's snapshot would predate the queue lock it
// waited for (it would fail on the runs the one before it took, or worse);
// Dequeue runs READ COMMITTED, and concurrent dequeues all succeed without
// handing out more slots than the limit.
func TestDequeueIsolation(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgqiso")
	s := open(t, url)
	if _, err := s.Pool().Exec(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L',
		current_database(), 'repeatable read'); END $$`); err != nil {
		t.Fatal(err)
	}
	s = open(t, url) // new sessions take the new default
	var iso string
	if err := s.Pool().QueryRow(ctx, `SHOW default_transaction_isolation`).Scan(&iso); err != nil || iso != "repeatable read" {
		t.Fatalf("default isolation %q, %v", iso, err)
	}
	if _, err := s.PutQueue(ctx, store.QueueLimits{Name: "q", Concurrency: 3}); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		var reqs []store.StartRequest
		for i := range 10 {
			reqs = append(reqs, store.StartRequest{Exec: store.Execution{ID: fmt.Sprintf("r%d-%d", round, i), Name: "order", Shard: "default/1", Queue: "q"}})
		}
		if _, err := s.StartExecutions(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		total := 0
		var wg sync.WaitGroup
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := s.Dequeue(context.WithoutCancel(ctx), store.DequeueRequest{Queue: "q"})
				if err != nil {
					t.Errorf("dequeue: %v", err)
				}
				mu.Lock()
				total += len(got)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if total != 3 {
			t.Fatalf("round %d: concurrent dequeues handed out %d slots, want 3", round, total)
		}
		// free the slots for the next round
		if _, err := s.Pool().Exec(ctx, `UPDATE voltro_workflow_executions SET status = 'completed' WHERE status = 'running'`); err != nil {
			t.Fatal(err)
		}
	}
}
