package voltrotest_test

// Queues in virtual time: fleet limits, priority, partitions, a rate
// limit, deferred starts and a cancel while queued.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/voltrotest"
)

// trace records the order runs started in and the most active at once.
type trace struct {
	mu      sync.Mutex
	order   []string
	active  map[string]int // by partition
	now     int
	maxSeen int
	maxPart int
}

func (tr *trace) enter(name, part string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.active == nil {
		tr.active = map[string]int{}
	}
	tr.order = append(tr.order, name)
	tr.now++
	tr.active[part]++
	tr.maxSeen = max(tr.maxSeen, tr.now)
	tr.maxPart = max(tr.maxPart, tr.active[part])
}

func (tr *trace) leave(part string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.now--
	tr.active[part]--
}

type job struct {
	Name string
	Part string
}

// jobWorkflow records itself, sleeps (keeping its slot) and returns.
func jobWorkflow(name string, tr *trace) *voltro.Workflow[job, string] {
	return voltro.NewWorkflow(name, func(wc *voltro.WorkflowContext, in job) (string, error) {
		if _, err := voltro.Step(wc, "enter", func(context.Context) (int, error) { tr.enter(in.Name, in.Part); return 0, nil }); err != nil {
			return "", err
		}
		wc.Sleep(time.Minute)
		if _, err := voltro.Step(wc, "leave", func(context.Context) (int, error) { tr.leave(in.Part); return 0, nil }); err != nil {
			return "", err
		}
		return in.Name, nil
	})
}

func results(t *testing.T, ctx context.Context, hs []*voltro.Handle[string]) {
	t.Helper()
	for _, h := range hs {
		if _, err := h.Result(ctx); err != nil {
			t.Fatalf("run %s: %v", h.ID, err)
		}
	}
}

func TestQueueConcurrencyHoldsAcrossSleeps(t *testing.T) {
	t.Parallel()
	tr := &trace{}
	wf := jobWorkflow("queues.conc", tr)
	q := voltro.NewQueue("conc", voltro.QueueOptions{Concurrency: 2})
	env := voltrotest.New(t, q, wf)
	ctx := within(t)
	var hs []*voltro.Handle[string]
	for i := range 7 {
		h, err := wf.Start(ctx, env.App(), job{Name: fmt.Sprint(i)}, voltro.OnQueue(q))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	results(t, ctx, hs)
	if tr.maxSeen != 2 {
		t.Fatalf("at most %d runs were active at once, want 2", tr.maxSeen)
	}
	st, err := env.App().Get(ctx, hs[6].ID)
	if err != nil || st.Queue != "conc" || st.DequeuedAt == nil || st.Status != voltro.StatusCompleted {
		t.Fatalf("the run's queue and dequeue time: %+v %v", st, err)
	}
	// 7 runs of a minute each, two at a time: four rounds of sleeps
	if el := env.Now().Sub(st.CreatedAt); el < 4*time.Minute {
		t.Fatalf("the runs finished after %s, want at least 4 rounds of a minute", el)
	}
}

func TestQueuePriorityAndPartitions(t *testing.T) {
	t.Parallel()
	tr := &trace{}
	wf := jobWorkflow("queues.prio", tr)
	q := voltro.NewQueue("prio", voltro.QueueOptions{Concurrency: 1})
	tenants := voltro.NewQueue("tenants", voltro.QueueOptions{PartitionConcurrency: 1})
	env := voltrotest.New(t, q, tenants, wf)
	ctx := within(t)
	// the first takes the slot; the rest wait and leave in priority order
	var hs []*voltro.Handle[string]
	for i, p := range []int{0, 5, 1, 5, 0} {
		h, err := wf.Start(ctx, env.App(), job{Name: fmt.Sprintf("p%d", i)}, voltro.OnQueue(q), voltro.WithPriority(p))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	results(t, ctx, hs)
	if want := []string{"p0", "p4", "p2", "p1", "p3"}; !slices.Equal(tr.order, want) {
		t.Fatalf("order %v, want %v", tr.order, want)
	}

	// a hot tenant with 8 runs does not hold up the cold ones
	tr2 := &trace{}
	wf2 := jobWorkflow("queues.tenants", tr2)
	if err := env.App().Register(wf2); err != nil {
		t.Fatal(err)
	}
	hs = nil
	for i := range 8 {
		h, err := wf2.Start(ctx, env.App(), job{Name: fmt.Sprintf("hot%d", i), Part: "hot"}, voltro.OnQueue(tenants), voltro.WithPartitionKey("hot"))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	for _, k := range []string{"a", "b", "c"} {
		h, err := wf2.Start(ctx, env.App(), job{Name: "cold-" + k, Part: k}, voltro.OnQueue(tenants), voltro.WithPartitionKey(k))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	results(t, ctx, hs)
	if tr2.maxPart != 1 {
		t.Fatalf("a partition ran %d at once, want 1", tr2.maxPart)
	}
	hot2 := slices.Index(tr2.order, "hot2")
	for _, k := range []string{"a", "b", "c"} {
		if i := slices.Index(tr2.order, "cold-"+k); i < 0 || i > hot2 {
			t.Fatalf("cold tenant %s started after the hot tenant's third run: %v", k, tr2.order)
		}
	}
	if _, err := wf2.Start(ctx, env.App(), job{}, voltro.WithPartitionKey("x")); !errors.Is(err, voltro.ErrInvalidArgument) {
		t.Fatalf("a partition key without a queue: %v", err)
	}
}

func TestQueueRateLimit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var at []time.Time
	var env *voltrotest.Env
	wf := voltro.NewWorkflow("queues.rate", func(wc *voltro.WorkflowContext, _ int) (int, error) {
		return voltro.Step(wc, "send", func(context.Context) (int, error) {
			mu.Lock()
			at = append(at, env.Now())
			mu.Unlock()
			return 0, nil
		})
	})
	q := voltro.NewQueue("emails", voltro.QueueOptions{RateLimit: voltro.Rate{Limit: 2, Period: time.Minute}})
	env = voltrotest.New(t, q, wf)
	ctx := within(t)
	var hs []*voltro.Handle[int]
	for i := range 6 {
		h, err := wf.Start(ctx, env.App(), i, voltro.OnQueue(q))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	for _, h := range hs {
		if _, err := h.Result(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// the limit is on dequeues (a run's code may start a moment later)
	at = at[:0]
	for _, h := range hs {
		st, err := env.App().Get(ctx, h.ID)
		if err != nil || st.DequeuedAt == nil {
			t.Fatalf("%s: %+v %v", h.ID, st, err)
		}
		at = append(at, *st.DequeuedAt)
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := range at {
		n := 0
		for j := i; j < len(at) && at[j].Sub(at[i]) < time.Minute; j++ {
			n++
		}
		if n > 2 {
			t.Fatalf("%d dequeues within a minute of %s: %v", n, at[i], at)
		}
	}
	if el := at[5].Sub(at[0]); el < 2*time.Minute {
		t.Fatalf("6 dequeues at 2 a minute took %s", el)
	}
}

func TestStartAfterQueuedAndNot(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	ran := map[string]time.Time{}
	var env *voltrotest.Env
	wf := voltro.NewWorkflow("queues.later", func(wc *voltro.WorkflowContext, name string) (string, error) {
		return voltro.Step(wc, "mark", func(context.Context) (string, error) {
			mu.Lock()
			ran[name] = env.Now()
			mu.Unlock()
			return name, nil
		})
	})
	q := voltro.NewQueue("later", voltro.QueueOptions{Concurrency: 5})
	env = voltrotest.New(t, q, wf)
	ctx := within(t)
	start := env.Now()
	plain, err := wf.Start(ctx, env.App(), "plain", voltro.StartAfter(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	queued, err := wf.Start(ctx, env.App(), "queued", voltro.OnQueue(q), voltro.StartAt(start.Add(20*time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	st, err := env.App().Get(ctx, queued.ID)
	if err != nil || st.Status != voltro.StatusQueued || st.StartAt == nil {
		t.Fatalf("a deferred queued run: %+v %v", st, err)
	}
	for _, h := range []*voltro.Handle[string]{plain, queued} {
		if _, err := h.Result(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if d := ran["plain"].Sub(start); d < 10*time.Minute || d > 11*time.Minute {
		t.Fatalf("StartAfter(10m) ran after %s", d)
	}
	if d := ran["queued"].Sub(start); d < 20*time.Minute || d > 21*time.Minute {
		t.Fatalf("StartAt(+20m) ran after %s", d)
	}
}

func TestCancelWhileQueued(t *testing.T) {
	t.Parallel()
	tr := &trace{}
	wf := jobWorkflow("queues.cancel", tr)
	q := voltro.NewQueue("one", voltro.QueueOptions{Concurrency: 1})
	env := voltrotest.New(t, q, wf)
	ctx := within(t)
	first, err := wf.Start(ctx, env.App(), job{Name: "first"}, voltro.OnQueue(q))
	if err != nil {
		t.Fatal(err)
	}
	second, err := wf.Start(ctx, env.App(), job{Name: "second"}, voltro.OnQueue(q))
	if err != nil {
		t.Fatal(err)
	}
	// the first gets the slot (a dequeue after its start, not in it)
	for {
		st, err := env.App().Get(ctx, first.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != voltro.StatusQueued {
			break
		}
		time.Sleep(time.Millisecond) // wall time: the dequeuer works in the background
	}
	queued, err := env.App().List(ctx, voltro.ListFilter{Queue: "one", Status: voltro.StatusQueued})
	if err != nil || len(queued) != 1 || queued[0].ID != second.ID {
		t.Fatalf("the queued run: %+v %v", queued, err)
	}
	if err := env.App().Cancel(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Result(ctx); !errors.Is(err, voltro.ErrCancelled) {
		t.Fatalf("a run cancelled while queued: %v", err)
	}
	if _, err := first.Result(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.order, []string{"first"}) {
		t.Fatalf("the cancelled run never runs: %v", tr.order)
	}
	qs, err := env.App().Queues(ctx)
	if err != nil || len(qs) != 1 || qs[0].Name != "one" || qs[0].Options.Concurrency != 1 || qs[0].Queued != 0 || qs[0].Active != 0 {
		t.Fatalf("queues: %+v %v", qs, err)
	}
}
