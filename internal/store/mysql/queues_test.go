// Queues on the real server: the plans Dequeue's reads get, and dequeues
// racing on three Galera nodes.
package mysql_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/testdb"
)

// Dequeue's reads come from the queue's entries of its two indexes, never
// from the runs of other queues or of none: the heads' window and the
// slots in use from idx_wf_exec_queue alone (covering), the rate window as
// a range of idx_wf_exec_dequeued (the queue's dequeues of the period, not
// all of them).
func TestDequeuePlans(t *testing.T) {
	s, _ := fresh(t, "myqueueplan", quiet)
	ctx := ctxT(t)
	var reqs []store.StartRequest
	for i := range 1500 {
		x := store.Execution{ID: fmt.Sprintf("r%05d", i), Name: "order", Shard: "default/1", Input: []byte(`{}`)}
		var m *store.Message
		if i%10 == 0 {
			x.Queue, x.Partition = "llm", fmt.Sprint("t", i%7)
		} else {
			m = &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: x.ID, Tag: store.TagStart, DedupeKey: store.RunStartKey(x.ID)}
		}
		if reqs = append(reqs, store.StartRequest{Exec: x, Message: m}); len(reqs) == 250 {
			if _, err := s.StartExecutions(ctx, reqs); err != nil {
				t.Fatal(err)
			}
			reqs = nil
		}
	}
	if _, err := s.PutQueue(ctx, store.QueueLimits{Name: "llm", Concurrency: 50}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "llm", Max: 10}); err != nil || len(got) != 10 {
		t.Fatalf("dequeue: %d %v", len(got), err)
	}
	// an hour-old history of the queue: most of its runs, dequeued and ended
	if _, err := s.DB().ExecContext(ctx, `UPDATE voltro_workflow_executions SET queue = 'llm', status = 'completed',
		dequeued_at = TIMESTAMPADD(HOUR, -1, UTC_TIMESTAMP(6)) WHERE queue IS NULL AND id < 'r01000'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, "ANALYZE TABLE voltro_workflow_executions"); err != nil {
		t.Fatal(err)
	}
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []store.QueueLimits{
		{Name: "llm", Concurrency: 50},
		{Name: "llm", PartitionConcurrency: 2},
		{Name: "llm", PartitionConcurrency: 2, WorkerConcurrency: 3},
	} {
		q, args := mysql.HeadsSQL(l, 10, now)
		for _, r := range explain(t, s, q, args) {
			if r["table"] == "voltro_workflow_executions" && r["select_type"] == "DERIVED" &&
				(r["key"] != "idx_wf_exec_queue" || !strings.Contains(r["Extra"], "Using index")) {
				t.Errorf("heads of %+v read %+v, not idx_wf_exec_queue alone", l, r)
			}
		}
	}
	for _, c := range []struct {
		what, query, key, access string
		args                     []any
	}{
		{"slots in use", mysql.CountSlots, "idx_wf_exec_queue", "", []any{"llm"}},
		{"rate window", mysql.CountRecent, "idx_wf_exec_dequeued", "range", []any{"llm", now.Add(-time.Minute)}},
	} {
		rs := explain(t, s, c.query, c.args)
		if len(rs) != 1 || rs[0]["key"] != c.key || !strings.Contains(rs[0]["Extra"], "Using index") || (c.access != "" && rs[0]["type"] != c.access) {
			t.Errorf("%s: plan %+v, want %s %s from the index alone", c.what, rs, c.access, c.key)
		}
	}
}

// explain returns EXPLAIN's rows of query, by column name.
func explain(t *testing.T, s *mysql.Store, query string, args []any) []map[string]string {
	t.Helper()
	rows, err := s.DB().QueryContext(ctxT(t), "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		r := map[string]string{}
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				r[c] = string(b)
			} else if vals[i] != nil {
				r[c] = fmt.Sprint(vals[i])
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Dequeues racing on three Galera nodes never hand out more slots than the
// queue's limit: the node-local lock of the queue's row does not serialize
// them, the write of that row does (one of two concurrent dequeues fails
// certification and runs again). Each round, racers on every node dequeue
// at once, then some of the runs holding slots end.
func TestDequeueRaceGalera(t *testing.T) {
	const (
		limit  = 3
		racers = 6
		rounds = 12
	)
	urls := testdb.Galera(t)
	stores := make([]*mysql.Store, len(urls))
	for i, u := range urls {
		stores[i] = open(t, u, quiet)
	}
	ctx := ctxT(t)
	if err := stores[0].Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[0].PutQueue(ctx, store.QueueLimits{Name: "race", Concurrency: limit}); err != nil {
		t.Fatal(err)
	}
	for i := range racers * rounds {
		x := store.Execution{ID: fmt.Sprintf("x%03d", i), Name: "order", Shard: "default/1", Input: []byte(`{}`), Queue: "race"}
		if _, _, _, err := stores[i%len(stores)].StartExecution(ctx, x, store.StartContext{}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	l, err := stores[0].NewLocker(ctx, store.LockRow, "me:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	epoch, ok, err := l.Acquire(ctx, "default/1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	fence := store.Fence{Owner: "me:1", Epoch: epoch}

	handed := map[string]int{} // run -> round it got its slot
	var holding []string
	collided := 0
	for r := range rounds {
		start := make(chan struct{})
		var mu sync.Mutex
		var got []string
		var wg sync.WaitGroup
		for g := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				out, err := stores[g%len(stores)].Dequeue(ctx, store.DequeueRequest{Queue: "race"})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					collided++ // refused after colliding: allowed, over-handing is not
					t.Logf("round %d, racer %d: %v", r, g, err)
					return
				}
				for _, d := range out {
					got = append(got, d.ExecutionID)
				}
			}()
		}
		close(start)
		wg.Wait()
		for _, id := range got {
			if prev, ok := handed[id]; ok {
				t.Fatalf("round %d: %s handed out again (first in round %d)", r, id, prev)
			}
			handed[id] = r
		}
		holding = append(holding, got...)
		if len(holding) > limit {
			t.Fatalf("round %d: %d runs hold slots, the limit is %d: %v", r, len(holding), limit, holding)
		}
		running, err := stores[2].ListExecutions(ctx, store.ExecutionFilter{Queue: "race", Status: store.ExecRunning})
		if err != nil {
			t.Fatal(err)
		}
		if len(running) != len(holding) {
			t.Fatalf("round %d: %d runs running, %d handed out and not ended", r, len(running), len(holding))
		}
		// the first one or two holders end, on the node that holds the runs
		for range 1 + r%2 {
			if len(holding) == 0 {
				break
			}
			err := store.UpdateExecution(ctx, stores[1], store.ExecutionUpdate{ID: holding[0], Shard: "default/1", Fence: fence, Status: store.ExecCompleted, Output: []byte(`1`)})
			if err != nil {
				t.Fatal(err)
			}
			holding = holding[1:]
		}
	}
	var retries int64
	for _, s := range stores {
		retries += s.RetryCount()
	}
	t.Logf("%d rounds of %d racers on %d nodes: %d runs handed out, %d dequeues refused, %d retries after 1213/1205",
		rounds, racers, len(stores), len(handed), collided, retries)
	if len(handed) < rounds {
		t.Fatalf("only %d runs handed out in %d rounds: the dequeues did not race for slots", len(handed), rounds)
	}
}
