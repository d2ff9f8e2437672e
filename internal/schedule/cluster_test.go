// Cluster coordination against a small in-test engine that owns the clock
// and moves ownership of the schedule when its owner stops; the records go
// to a real PostgreSQL database.
package schedule

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/testwait"
)

// toyEngine stands in for the workflow engine: one timer per schedule, the
// owner fires, ownership moves to the next member takeover after the owner
// leaves, and a tick key is fired at most once.
type toyEngine struct {
	takeover time.Duration

	mu      sync.Mutex
	members []string // in joining order
	sched   map[string]ClusterSchedule
	ctxs    map[string]context.Context
	owner   string
	fired   map[string]bool
	started bool
	moved   chan struct{} // ownership changed: flush the pending ticks
}

func newToyEngine(takeover time.Duration) *toyEngine {
	return &toyEngine{takeover: takeover, sched: map[string]ClusterSchedule{}, ctxs: map[string]context.Context{}, fired: map[string]bool{}, moved: make(chan struct{}, 1)}
}

type toyFirer struct {
	e       *toyEngine
	replica string
}

func (f toyFirer) ScheduleCluster(ctx context.Context, s ClusterSchedule) error {
	e := f.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.members = append(e.members, f.replica)
	e.sched[f.replica], e.ctxs[f.replica] = s, ctx
	if e.owner == "" {
		e.owner = f.replica
	}
	if !e.started {
		e.started = true
		go e.clock(s.Spec)
	}
	go func() {
		<-ctx.Done()
		e.leave(f.replica)
	}()
	return nil
}

func (e *toyEngine) leave(replica string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, m := range e.members {
		if m == replica {
			e.members = append(e.members[:i], e.members[i+1:]...)
			break
		}
	}
	if e.owner != replica {
		return
	}
	e.owner = ""
	time.AfterFunc(e.takeover, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if len(e.members) > 0 {
			e.owner = e.members[0]
			select {
			case e.moved <- struct{}{}:
			default:
			}
		}
	})
}

// clock fires every tick on the owner; ticks due while nobody owns the
// schedule go to the next owner, late (catch-up) or as missed.
func (e *toyEngine) clock(spec Spec) {
	var pending []time.Time
	cursor := time.Now()
	for {
		next := spec.Next(cursor)
		select {
		case <-time.After(time.Until(next)):
			cursor = next
			pending = append(pending, next)
		case <-e.moved:
		}
		e.mu.Lock()
		owner := e.owner
		s, ctx := e.sched[owner], e.ctxs[owner]
		if owner == "" || ctx.Err() != nil {
			e.mu.Unlock()
			continue
		}
		due := pending
		pending = nil
		var todo []time.Time
		for _, at := range due {
			if !e.fired[s.Key(at)] {
				e.fired[s.Key(at)] = true
				todo = append(todo, at)
			}
		}
		e.mu.Unlock()
		for i, at := range todo {
			if i < len(todo)-1 && !s.CatchUp {
				_ = s.Missed(ctx, at)
				continue
			}
			go func() { _ = s.Fire(ctx, at) }()
		}
	}
}

func TestClusterModeFiresOnTheOwnerAndMovesOnDeath(t *testing.T) {
	t.Parallel()
	const takeover = 1500 * time.Millisecond
	url := storeCases(t, "cluster", false)[1].url // postgres
	st := openURL(t, url)
	eng := newToyEngine(takeover)
	stops := map[string]func(){}
	for _, replica := range []string{"a", "b"} {
		s := newTestScheduler(t, Config{ReplicaID: replica, Store: openURL(t, url), Cluster: toyFirer{eng, replica}, Default: Cluster})
		if s.DefaultCoordination() != Cluster {
			t.Fatalf("default %s", s.DefaultCoordination())
		}
		// Parallel: this test is about who fires each tick. Under the
		// default overlap rule a tick fired late (run 1 of a stop fired the
		// first tick after the takeover 1 s late) may still be recording
		// its finish when the next one comes, which is rightly skipped.
		if err := s.Register(Schedule{Name: "clustered", Spec: "* * * * * *", Overlap: OverlapParallel, Func: noop}); err != nil {
			t.Fatal(err)
		}
		if err := s.FireCluster(context.Background(), "nope", time.Now()); !errors.Is(err, errs.ErrNotFound) {
			t.Fatalf("FireCluster unknown: %v", err)
		}
		stops[replica] = runScheduler(t, s)
		testwait.For(t, 5*time.Second, "the newest replica to own the schedule", func() bool { // a joins first and owns the schedule
			eng.mu.Lock()
			defer eng.mu.Unlock()
			return len(eng.members) > 0 && eng.members[len(eng.members)-1] == replica
		})
	}
	// A replica whose engine never fires: its own timer must stay disarmed.
	idle := newTestScheduler(t, Config{ReplicaID: "idle", Store: openURL(t, url), Cluster: neverFirer{}})
	if err := idle.Register(Schedule{Name: "idle-cluster", Spec: "* * * * * *", Coordination: Cluster, Func: noop}); err != nil {
		t.Fatal(err)
	}
	runScheduler(t, idle)

	time.Sleep(3200 * time.Millisecond)
	killedAt := time.Now()
	stops["a"]()
	time.Sleep(4 * time.Second)
	stops["b"]()

	if rs := runsOf(t, st, "idle-cluster"); len(rs) != 0 {
		t.Fatalf("a cluster schedule fired by its own timer: %+v", rs)
	}
	rs := runsOf(t, st, "clustered")
	if len(rs) < 5 {
		t.Fatalf("rows: %+v", rs)
	}
	seen := map[int64]Run{}
	var lastA, firstB time.Time
	for _, r := range rs {
		b := r.ScheduledAt.Unix()
		if prev, dup := seen[b]; dup {
			t.Fatalf("tick %d recorded twice: %+v and %+v", b, prev, r)
		}
		seen[b] = r
		switch {
		case r.Outcome == OutcomeMissed:
			if r.ScheduledAt.Before(killedAt.Add(-time.Second)) || r.ScheduledAt.After(killedAt.Add(takeover+time.Second)) {
				t.Errorf("missed outside the takeover: %+v", r)
			}
		case r.Outcome != OutcomeCluster:
			t.Errorf("outcome %s in cluster mode: %+v", r.Outcome, r)
		case r.ReplicaID == "a":
			lastA = r.ScheduledAt
			if r.ScheduledAt.After(killedAt) {
				t.Errorf("a fired after it died: %+v", r)
			}
		case r.ReplicaID == "b":
			if firstB.IsZero() {
				firstB = r.ScheduledAt
			}
		}
	}
	first, last := rs[0].ScheduledAt.Unix(), rs[len(rs)-1].ScheduledAt.Unix()
	for b := first; b <= last; b++ {
		if _, ok := seen[b]; !ok {
			t.Errorf("tick %d has no row", b)
		}
	}
	if lastA.IsZero() || firstB.IsZero() || firstB.Sub(lastA) > takeover+time.Second {
		t.Fatalf("ownership did not move within the takeover (killed %v): last a %v, first b %v, rows %+v", killedAt, lastA, firstB, rs)
	}
	t.Logf("%d ticks, a fired until %v, b from %v", len(rs), lastA.Format("15:04:05"), firstB.Format("15:04:05"))
}
