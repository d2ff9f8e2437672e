package storetest

// The queue part of the conformance suite: queued starts, and the dequeue
// that hands out slots under the queue's stored limits.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// runQueues runs the queue cases.
func runQueues(t *testing.T, factory Factory) {
	t.Run("PutAndList", func(t *testing.T) { d, _ := open(t, factory); testPutQueue(t, d) })
	t.Run("QueuedStart", func(t *testing.T) { d, _ := open(t, factory); testQueuedStart(t, d) })
	t.Run("Concurrency", func(t *testing.T) { d, _ := open(t, factory); testQueueConcurrency(t, d) })
	t.Run("PriorityFIFO", func(t *testing.T) { d, _ := open(t, factory); testQueuePriority(t, d) })
	t.Run("Partitions", func(t *testing.T) { d, _ := open(t, factory); testQueuePartitions(t, d) })
	t.Run("RateLimit", func(t *testing.T) { d, c := open(t, factory); testQueueRate(t, d, c) })
	t.Run("StartAt", func(t *testing.T) { d, c := open(t, factory); testQueueStartAt(t, d, c) })
	t.Run("WorkerConcurrency", func(t *testing.T) { d, _ := open(t, factory); testQueueWorkers(t, d) })
	t.Run("ConcurrentDequeues", func(t *testing.T) { d, _ := open(t, factory); testQueueRace(t, d) })
	t.Run("Stats", func(t *testing.T) { d, c := open(t, factory); testQueueStats(t, d, c) })
	t.Run("BatchStart", func(t *testing.T) { d, _ := open(t, factory); testQueueBatch(t, d) })
}

// queuedExec is a run of workflow "order" on queue q.
func queuedExec(id, q, partition string, priority int) store.Execution {
	return store.Execution{ID: id, Name: "order", Shard: "default/1", Input: []byte(`{}`), Queue: q, Partition: partition, Priority: priority}
}

func startQueued(t *testing.T, d store.Driver, x store.Execution) {
	t.Helper()
	_, existing, _, err := d.StartExecution(ctxT(t), x, store.StartContext{Source: "api"}, nil, nil)
	check(t, err)
	if existing {
		t.Fatalf("%s exists already", x.ID)
	}
}

func dequeue(t *testing.T, d store.Driver, q string, max int) []string {
	t.Helper()
	got := must(d.Dequeue(ctxT(t), store.DequeueRequest{Queue: q, Max: max}))(t)
	ids := make([]string, len(got))
	for i, g := range got {
		ids[i] = g.ExecutionID
	}
	return ids
}

// finish completes run id, fenced under the holder of its shard.
func finish(t *testing.T, d store.Driver, id, shard string, f store.Fence) {
	t.Helper()
	check(t, store.UpdateExecution(ctxT(t), d, store.ExecutionUpdate{ID: id, Shard: shard, Fence: f, Status: store.ExecCompleted, Output: []byte(`1`)}))
}

func testPutQueue(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	q := store.QueueLimits{Name: "llm", Concurrency: 10, WorkerConcurrency: 4, PartitionConcurrency: 1, RateLimit: 50, RatePeriod: time.Second}
	if changed := must(d.PutQueue(ctx, q))(t); !changed {
		t.Fatal("a queue stored the first time is a change")
	}
	if changed := must(d.PutQueue(ctx, q))(t); changed {
		t.Fatal("the same limits again are no change")
	}
	q2 := q
	q2.Concurrency = 3
	if changed := must(d.PutQueue(ctx, q2))(t); !changed {
		t.Fatal("new limits are a change")
	}
	must(d.PutQueue(ctx, store.QueueLimits{Name: "emails"}))(t)
	got := must(d.ListQueues(ctx))(t)
	if len(got) != 2 || got[0].Name != "emails" || got[1] != q2 {
		t.Fatalf("list: %+v", got)
	}
}

func testQueuedStart(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	x := queuedExec("q1", "llm", "tenant-7", 2)
	x.StartAt = at
	startQueued(t, d, x)
	g := must(d.GetExecution(ctx, "q1"))(t)
	if g.Status != store.ExecQueued || g.Queue != "llm" || g.Partition != "tenant-7" || g.Priority != 2 || !g.StartAt.Equal(at) || !g.DequeuedAt.IsZero() {
		t.Fatalf("a queued run reads back queued with its place: %+v", g)
	}
	if msgs := must(d.ListMessages(ctx, store.MessageFilter{EntityID: "q1"}))(t); len(msgs) != 0 {
		t.Fatalf("a queued run has no start message: %+v", msgs)
	}
	startQueued(t, d, queuedExec("q2", "other", "", 0))
	// unknown queue: no limits stored, nothing is dequeued
	if got := dequeue(t, d, "llm", 0); len(got) != 0 {
		t.Fatalf("a queue without stored limits dequeues nothing: %v", got)
	}
	byQueue := must(d.ListExecutions(ctx, store.ExecutionFilter{Queue: "llm"}))(t)
	if len(byQueue) != 1 || byQueue[0].ID != "q1" {
		t.Fatalf("list by queue: %+v", byQueue)
	}
	byStatus := must(d.ListExecutions(ctx, store.ExecutionFilter{Status: store.ExecQueued}))(t)
	if len(byStatus) != 2 {
		t.Fatalf("list by status queued: %+v", byStatus)
	}
	// a queued run can be cancelled: it is not terminal
	if ok := must(d.RequestCancel(ctx, "q2", msg("default/1", "workflow/order", "q2", `{}`)))(t); !ok {
		t.Fatal("a queued run takes a cancel request")
	}
}

func testQueueConcurrency(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	must(d.PutQueue(ctx, store.QueueLimits{Name: "llm", Concurrency: 2}))(t)
	for i := 1; i <= 5; i++ {
		startQueued(t, d, queuedExec(fmt.Sprintf("c%d", i), "llm", "", 0))
	}
	got := must(d.Dequeue(ctx, store.DequeueRequest{Queue: "llm"}))(t)
	if len(got) != 2 || got[0].ExecutionID != "c1" || got[1].ExecutionID != "c2" || got[0].Name != "order" || got[0].Shard != "default/1" || got[0].MessageID <= 0 {
		t.Fatalf("first dequeue: %+v", got)
	}
	x := must(d.GetExecution(ctx, "c1"))(t)
	if x.Status != store.ExecRunning || x.DequeuedAt.IsZero() || x.Queue != "llm" {
		t.Fatalf("a dequeued run is running with its dequeue time: %+v", x)
	}
	if again := dequeue(t, d, "llm", 0); len(again) != 0 {
		t.Fatalf("both slots are held: %v", again)
	}
	// the start messages are deliverable now, to the shard's holder
	_, e := own(t, d, "me:1", "default/1")
	f := store.Fence{Owner: "me:1", Epoch: e}
	claimed := must(d.Claim(ctx, store.ClaimRequest{Owner: "me:1", Types: []string{"workflow/order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}))(t)
	if len(claimed) != 2 || claimed[0].Tag != store.TagStart || claimed[0].DedupeKey != store.RunStartKey(claimed[0].EntityID) {
		t.Fatalf("the dequeued runs' start messages: %+v", claimed)
	}
	// a suspended run keeps its slot
	check(t, store.UpdateExecution(ctx, d, store.ExecutionUpdate{ID: "c1", Shard: "default/1", Fence: f, Status: store.ExecSuspended, WaitingOn: "sleep 1"}))
	if again := dequeue(t, d, "llm", 0); len(again) != 0 {
		t.Fatalf("a suspended run holds its slot: %v", again)
	}
	finish(t, d, "c1", "default/1", f)
	if next := dequeue(t, d, "llm", 0); len(next) != 1 || next[0] != "c3" {
		t.Fatalf("an end frees one slot: %v", next)
	}
	// a cap below the room
	must(d.PutQueue(ctx, store.QueueLimits{Name: "llm", Concurrency: 10}))(t)
	if capped := dequeue(t, d, "llm", 1); len(capped) != 1 || capped[0] != "c4" {
		t.Fatalf("Max caps a dequeue: %v", capped)
	}
	if rest := dequeue(t, d, "llm", 0); len(rest) != 1 || rest[0] != "c5" {
		t.Fatalf("raised limits take effect at the next dequeue: %v", rest)
	}
}

func testQueuePriority(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	must(d.PutQueue(ctx, store.QueueLimits{Name: "p", Concurrency: 1}))(t)
	for i, prio := range []int{5, 1, 5, 0, 1} {
		startQueued(t, d, queuedExec(fmt.Sprintf("p%d", i), "p", "", prio))
	}
	_, e := own(t, d, "me:1", "default/1")
	f := store.Fence{Owner: "me:1", Epoch: e}
	var order []string
	for range 5 {
		got := dequeue(t, d, "p", 0)
		if len(got) != 1 {
			t.Fatalf("one slot: %v after %v", got, order)
		}
		order = append(order, got[0])
		finish(t, d, got[0], "default/1", f)
	}
	if want := "[p3 p1 p4 p0 p2]"; fmt.Sprint(order) != want {
		t.Fatalf("lower priority first, FIFO within: got %v, want %s", order, want)
	}
}

func testQueuePartitions(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	must(d.PutQueue(ctx, store.QueueLimits{Name: "t", PartitionConcurrency: 1}))(t)
	// a hot partition started first with many runs, then three cold ones
	for i := range 6 {
		startQueued(t, d, queuedExec(fmt.Sprintf("hot%d", i), "t", "hot", 0))
	}
	for _, k := range []string{"a", "b", "c"} {
		startQueued(t, d, queuedExec("cold-"+k, "t", k, 0))
	}
	got := dequeue(t, d, "t", 0)
	if fmt.Sprint(got) != "[hot0 cold-a cold-b cold-c]" {
		t.Fatalf("one run per partition: %v", got)
	}
	if again := dequeue(t, d, "t", 0); len(again) != 0 {
		t.Fatalf("every partition is at its limit: %v", again)
	}
	_, e := own(t, d, "me:1", "default/1")
	finish(t, d, "hot0", "default/1", store.Fence{Owner: "me:1", Epoch: e})
	if next := dequeue(t, d, "t", 0); fmt.Sprint(next) != "[hot1]" {
		t.Fatalf("the hot partition's next run: %v", next)
	}

	// without a partition limit, partitions take turns under the queue's
	must(d.PutQueue(ctx, store.QueueLimits{Name: "fair", Concurrency: 4}))(t)
	for i := range 6 {
		startQueued(t, d, queuedExec(fmt.Sprintf("f-hot%d", i), "fair", "hot", 0))
	}
	startQueued(t, d, queuedExec("f-cold", "fair", "cold", 0))
	if got := dequeue(t, d, "fair", 2); fmt.Sprint(got) != "[f-hot0 f-cold]" {
		t.Fatalf("partitions take turns: %v", got)
	}
}

func testQueueRate(t *testing.T, d store.Driver, c *Clock) {
	ctx := ctxT(t)
	must(d.PutQueue(ctx, store.QueueLimits{Name: "r", RateLimit: 2, RatePeriod: 10 * time.Second}))(t)
	for i := range 5 {
		startQueued(t, d, queuedExec(fmt.Sprintf("r%d", i), "r", "", 0))
	}
	if got := dequeue(t, d, "r", 0); len(got) != 2 {
		t.Fatalf("two per window: %v", got)
	}
	c.Advance(5 * time.Second)
	if got := dequeue(t, d, "r", 0); len(got) != 0 {
		t.Fatalf("the window is full: %v", got)
	}
	c.Advance(6 * time.Second)
	if got := dequeue(t, d, "r", 0); len(got) != 2 {
		t.Fatalf("a new window: %v", got)
	}
}

func testQueueStartAt(t *testing.T, d store.Driver, c *Clock) {
	ctx := ctxT(t)
	must(d.PutQueue(ctx, store.QueueLimits{Name: "s"}))(t)
	later := queuedExec("later", "s", "", 0)
	later.StartAt = c.Now().Add(time.Minute)
	startQueued(t, d, later)
	startQueued(t, d, queuedExec("now", "s", "", 0))
	if got := dequeue(t, d, "s", 0); fmt.Sprint(got) != "[now]" {
		t.Fatalf("only the due run: %v", got)
	}
	c.Advance(2 * time.Minute)
	if got := dequeue(t, d, "s", 0); fmt.Sprint(got) != "[later]" {
		t.Fatalf("the run is due: %v", got)
	}
}

func testQueueWorkers(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	must(d.PutQueue(ctx, store.QueueLimits{Name: "w", WorkerConcurrency: 1}))(t)
	own(t, d, "a:1", "default/1")
	own(t, d, "b:1", "default/2")
	for i := range 3 {
		x := queuedExec(fmt.Sprintf("w1-%d", i), "w", "", 0)
		startQueued(t, d, x)
		y := queuedExec(fmt.Sprintf("w2-%d", i), "w", "", 0)
		y.Shard = "default/2"
		startQueued(t, d, y)
	}
	if got := dequeue(t, d, "w", 0); fmt.Sprint(got) != "[w1-0 w2-0]" {
		t.Fatalf("one run per shard holder: %v", got)
	}
	if got := dequeue(t, d, "w", 0); len(got) != 0 {
		t.Fatalf("both holders are at their limit: %v", got)
	}
}

// testQueueRace: dequeues from many connections at once never hand out
// more slots than the limit.
func testQueueRace(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	must(d.PutQueue(ctx, store.QueueLimits{Name: "race", Concurrency: 3}))(t)
	for i := range 20 {
		startQueued(t, d, queuedExec(fmt.Sprintf("x%02d", i), "race", "", 0))
	}
	var mu sync.Mutex
	var total []string
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := d.Dequeue(context.WithoutCancel(ctx), store.DequeueRequest{Queue: "race"})
			if err != nil {
				errc <- err
				return
			}
			mu.Lock()
			for _, g := range got {
				total = append(total, g.ExecutionID)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		// a store may refuse a dequeue that collided (a deadlock, a
		// certification failure): never one that over-hands
		t.Logf("a concurrent dequeue failed: %v", err)
	}
	if len(total) != 3 {
		t.Fatalf("concurrent dequeues handed out %d slots, want 3: %v", len(total), total)
	}
	running := must(d.ListExecutions(ctx, store.ExecutionFilter{Queue: "race", Status: store.ExecRunning}))(t)
	if len(running) != 3 {
		t.Fatalf("three runs hold slots: %+v", running)
	}
}

func testQueueStats(t *testing.T, d store.Driver, c *Clock) {
	ctx := ctxT(t)
	must(d.PutQueue(ctx, store.QueueLimits{Name: "st", Concurrency: 2}))(t)
	for i := range 4 {
		startQueued(t, d, queuedExec(fmt.Sprintf("a%d", i), "st", "acme", 0))
	}
	startQueued(t, d, queuedExec("b0", "st", "bolt", 0))
	later := queuedExec("later", "st", "", 0)
	later.StartAt = c.Now().Add(time.Hour)
	startQueued(t, d, later)
	dequeue(t, d, "st", 0)
	c.Advance(3 * time.Second)
	st := must(d.QueueStats(ctx, "st"))(t)
	if st.Name != "st" || st.Queued != 4 || st.Due != 3 || st.Active != 2 || st.RecentDequeues != 2 || st.OldestDue < 3*time.Second || st.OldestDue > time.Minute {
		t.Fatalf("stats: %+v", st)
	}
	if len(st.Partitions) != 3 || st.Partitions[0] != (store.PartitionCount{Key: "acme", Queued: 3, Active: 1}) {
		t.Fatalf("busiest partitions: %+v", st.Partitions)
	}
	empty := must(d.QueueStats(ctx, "none"))(t)
	if empty.Queued != 0 || empty.Active != 0 || len(empty.Partitions) != 0 {
		t.Fatalf("a queue with no runs: %+v", empty)
	}
}

func testQueueBatch(t *testing.T, d store.Driver) {
	bs := d.Capabilities().BatchStarts
	if bs == nil {
		t.Skipf("the %s store starts runs one transaction each (no Capabilities.BatchStarts)", d.Dialect())
	}
	ctx := ctxT(t)
	must(d.PutQueue(ctx, store.QueueLimits{Name: "b", Concurrency: 1}))(t)
	out := must(bs.StartExecutions(ctx, []store.StartRequest{
		{Exec: queuedExec("bq1", "b", "k", 3)},
		{Exec: newExec("plain"), Message: startMsg("plain")},
		{Exec: queuedExec("bq2", "b", "k", 3)},
	}))(t)
	for _, o := range out {
		check(t, o.Err)
	}
	if out[0].Stored.Status != store.ExecQueued || out[1].Stored.Status != store.ExecRunning {
		t.Fatalf("a batch keeps each start's kind: %+v", out)
	}
	if msgs := must(d.ListMessages(ctx, store.MessageFilter{EntityID: "bq1"}))(t); len(msgs) != 0 {
		t.Fatalf("a queued run of a batch has no start message: %+v", msgs)
	}
	g := must(d.GetExecution(ctx, "bq2"))(t)
	if g.Queue != "b" || g.Partition != "k" || g.Priority != 3 {
		t.Fatalf("its place: %+v", g)
	}
	if got := dequeue(t, d, "b", 0); fmt.Sprint(got) != "[bq1]" {
		t.Fatalf("dequeue after a batch: %v", got)
	}
}
