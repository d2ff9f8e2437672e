// Overlap policies across two replicas sharing one store: a run lasts 2.5
// ticks and every tick is contended.
package schedule

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// execution is one run of the function as seen from inside it.
type execution struct {
	replica    string
	at         time.Time
	start, end time.Time
}

type executions struct {
	mu sync.Mutex
	xs []execution
}

func (e *executions) add(x execution) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.xs = append(e.xs, x)
}

func (e *executions) sorted() []execution {
	e.mu.Lock()
	defer e.mu.Unlock()
	xs := slices.Clone(e.xs)
	slices.SortFunc(xs, func(a, b execution) int { return a.start.Compare(b.start) })
	return xs
}

// maxConcurrent is the most executions running at one instant.
func maxConcurrent(xs []execution) int {
	best := 0
	for _, x := range xs {
		n := 0
		for _, y := range xs {
			if !y.start.After(x.start) && y.end.After(x.start) {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

// TestOverlapAcrossReplicas runs every policy on every shared store at once
// (one window for all, whatever -parallel is), then checks each.
func TestOverlapAcrossReplicas(t *testing.T) {
	t.Parallel()
	const runFor, window = 2500 * time.Millisecond, 8500 * time.Millisecond
	type scenario struct {
		name   string
		policy Overlap
		st     Store
		ex     *executions
		scheds []*Scheduler
	}
	var scenarios []*scenario
	for _, sc := range storeCases(t, "overlap", true) {
		if sc.name == "sqlite" {
			continue
		}
		for _, policy := range []Overlap{OverlapSkip, OverlapQueue, OverlapParallel} {
			sn := &scenario{name: sc.name + "/" + string(policy), policy: policy, st: sc.open(t), ex: &executions{}}
			for _, replica := range []string{"a", "b"} {
				s := newTestScheduler(t, Config{ReplicaID: replica, Store: sc.open(t), Default: AdvisoryLock})
				err := s.Register(Schedule{Name: "overlap-" + string(policy), Spec: "* * * * * *", Overlap: policy, Func: func(ctx context.Context, at time.Time) error {
					x := execution{replica: replica, at: at, start: time.Now()}
					select {
					case <-time.After(runFor):
					case <-ctx.Done():
					}
					x.end = time.Now()
					sn.ex.add(x)
					return nil
				}})
				if err != nil {
					t.Fatal(err)
				}
				sn.scheds = append(sn.scheds, s)
			}
			scenarios = append(scenarios, sn)
		}
	}
	var stops []func()
	for _, sn := range scenarios {
		for _, s := range sn.scheds {
			stops = append(stops, runScheduler(t, s))
		}
	}
	time.Sleep(window)
	var wg sync.WaitGroup
	for _, stop := range stops {
		wg.Add(1)
		go func() { defer wg.Done(); stop() }()
	}
	wg.Wait()
	for _, sn := range scenarios {
		t.Run(sn.name, func(t *testing.T) { checkOverlap(t, sn.policy, sn.st, sn.ex.sorted(), sn.scheds) })
	}
}

func checkOverlap(t *testing.T, policy Overlap, st Store, xs []execution, scheds []*Scheduler) {
	name := "overlap-" + string(policy)
	rows := runsOf(t, st, name)
	counts := map[Outcome]int{}
	deciding := map[int64]int{} // per tick: rows that are not lostLock
	for _, r := range rows {
		counts[r.Outcome]++
		if r.Outcome != OutcomeLostLock {
			deciding[r.ScheduledAt.Unix()]++
		}
	}
	for b, n := range deciding {
		if n != 1 {
			t.Errorf("tick %d has %d deciding rows", b, n)
		}
	}
	stats := map[Outcome]int64{}
	for _, s := range scheds {
		for o, n := range s.Stats()[name] {
			stats[o] += n
		}
	}
	for _, o := range Outcomes {
		if stats[o] != int64(counts[o]) {
			t.Errorf("%s: stats %d, rows %d", o, stats[o], counts[o])
		}
	}
	replicas := map[string]bool{}
	for _, x := range xs {
		replicas[x.replica] = true
	}
	t.Logf("%s: %d executions on %d replicas, max concurrent %d, rows %v", policy, len(xs), len(replicas), maxConcurrent(xs), counts)
	switch policy {
	case OverlapSkip:
		if maxConcurrent(xs) != 1 {
			t.Errorf("skip let runs overlap: %+v", xs)
		}
		if counts[OutcomeSkippedOverlap] < 3 || counts[OutcomeQueued] != 0 || len(xs) < 2 {
			t.Errorf("skip: %d executions, rows %v", len(xs), counts)
		}
	case OverlapQueue:
		if maxConcurrent(xs) != 1 {
			t.Errorf("queue let runs overlap: %+v", xs)
		}
		if counts[OutcomeQueued] < 2 || counts[OutcomeSkippedOverlap] < 1 {
			t.Errorf("queue: rows %v", counts)
		}
		// A queued tick starts as soon as the run before it ends.
		for i := 1; i < len(xs); i++ {
			if gap := xs[i].start.Sub(xs[i-1].end); gap > time.Second {
				t.Errorf("queued run %v started %v after the previous one ended", xs[i].at, gap)
			}
		}
	case OverlapParallel:
		if maxConcurrent(xs) < 2 || counts[OutcomeSkippedOverlap] != 0 || counts[OutcomeQueued] != 0 {
			t.Errorf("parallel: max concurrent %d, rows %v", maxConcurrent(xs), counts)
		}
		if len(xs) != counts[OutcomeWonLock] || len(xs) < 7 {
			t.Errorf("parallel: %d executions for %d won ticks", len(xs), counts[OutcomeWonLock])
		}
	}
}
