package retention

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
)

// later is a memory store whose clock runs ahead: a pass made on it sweeps
// as of that later instant, so rows made now count as old without waiting.
type later struct {
	*memory.Store
	by time.Duration
}

func (l later) Now(ctx context.Context) (time.Time, error) {
	now, err := l.Store.Now(ctx)
	return now.Add(l.by), err
}

const shard = "default/1"

// finishedRuns makes n finished runs (a journal entry, a completed start
// message each) and one unfinished run on s.
func finishedRuns(t *testing.T, s *memory.Store, n int) {
	t.Helper()
	ctx := context.Background()
	l, err := s.NewLocker(ctx, store.LockRow, "me:1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	epoch, ok, err := l.Acquire(ctx, shard, time.Hour)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	f := store.Fence{Owner: "me:1", Epoch: epoch}
	start := func(id string) int64 {
		_, _, res, err := s.StartExecution(ctx, store.Execution{ID: id, Name: "w", Shard: shard},
			store.StartContext{}, &store.Message{Shard: shard, EntityType: "workflow/w", EntityID: id, Tag: "start", DedupeKey: store.RunStartKey(id)},
			&store.EnqueueClaim{Owner: "me:1", Epoch: epoch, ClaimTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		m := start(id)
		out, err := s.WriteRuns(ctx, []store.RunWrite{{Shard: shard, Fence: f, Message: m,
			Entry:  &store.JournalEntry{ExecutionID: id, Seq: 0, Kind: store.JournalStep, Name: "s"},
			Update: &store.ExecutionUpdate{ID: id, Status: store.ExecCompleted}}})
		if err != nil || out[0] != nil {
			t.Fatalf("finish %s: %v %v", id, err, out)
		}
	}
	start("live")
}

func TestPassDeletesWhatIsOldEnoughInBatches(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	finishedRuns(t, s, 5)
	p := Policy{Runs: time.Hour, DeadLetters: time.Hour, Runners: time.Hour}

	// as of now nothing is an hour old
	res, err := Pass(ctx, s, p, PassOptions{}, nil)
	if err != nil || res.Total(store.TableExecutions) != 0 {
		t.Fatalf("nothing is old yet: %+v %v", res, err)
	}
	// two hours on, a dry run counts the five runs in batches of two
	var batches int
	res, err = Pass(ctx, later{s, 2 * time.Hour}, p, PassOptions{Limit: 2, DryRun: true}, func(k store.SweepKind, b store.SweepBatch) {
		if k == store.SweepRuns {
			batches++
		}
	})
	if err != nil || !res.DryRun || res.Total(store.TableExecutions) != 5 || res.Total(store.TableJournal) != 5 || batches != 3 {
		t.Fatalf("dry run: %+v (%d batches) %v", res, batches, err)
	}
	if _, err := s.GetExecution(ctx, "r0"); err != nil {
		t.Fatalf("a dry run deletes nothing: %v", err)
	}
	res, err = Pass(ctx, later{s, 2 * time.Hour}, p, PassOptions{Limit: 2}, nil)
	if err != nil || res.Total(store.TableExecutions) != 5 || res.Total(store.TableMessages) != 5 || res.Kinds[0].Batches != 3 {
		t.Fatalf("pass: %+v %v", res, err)
	}
	if x, err := s.GetExecution(ctx, "live"); err != nil || x.Status.Terminal() {
		t.Fatalf("the unfinished run stays: %+v %v", x, err)
	}
}

func TestPassStopsWhenOwnershipGoes(t *testing.T) {
	s := memory.New()
	finishedRuns(t, s, 5)
	var asked atomic.Int32
	res, err := Pass(context.Background(), later{s, 2 * time.Hour}, Policy{Runs: time.Hour}, PassOptions{Limit: 2, Pause: time.Millisecond,
		Continue: func() bool { return asked.Add(1) == 1 }}, nil)
	if err != nil || !res.Stopped || res.Total(store.TableExecutions) != 2 {
		t.Fatalf("one batch, then the shard is gone: %+v %v", res, err)
	}
}

func TestPolicyRequests(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	rs := Policy{Runs: 24 * time.Hour, DeadLetters: 48 * time.Hour, Runners: time.Hour}.Requests(now)
	want := []store.SweepRequest{
		{Kind: store.SweepRuns, Before: now.Add(-24 * time.Hour), DeadBefore: now.Add(-48 * time.Hour)},
		{Kind: store.SweepProcessed, Before: now.Add(-24 * time.Hour), DeadBefore: now.Add(-48 * time.Hour)},
		{Kind: store.SweepDead, Before: now.Add(-48 * time.Hour), DeadBefore: now.Add(-48 * time.Hour)},
		{Kind: store.SweepRunners, Before: now.Add(-time.Hour), DeadBefore: now.Add(-48 * time.Hour)},
	}
	if fmt.Sprint(rs) != fmt.Sprint(want) {
		t.Fatalf("requests:\n%v\nwant\n%v", rs, want)
	}
	// 0 keeps that kind for ever; a run whose start message is dead then
	// stays too (no dead-letter cut-off)
	rs = Policy{Runs: time.Hour, Runners: time.Hour}.Requests(now)
	if len(rs) != 3 || rs[0].Kind != store.SweepRuns || !rs[0].DeadBefore.IsZero() || rs[2].Kind != store.SweepRunners {
		t.Fatalf("dead letters kept for ever: %v", rs)
	}
	if rs := (Policy{}).Requests(now); len(rs) != 0 {
		t.Fatalf("everything kept: %v", rs)
	}
}

func TestInterval(t *testing.T) {
	for p, want := range map[Policy]time.Duration{
		{Runs: 7 * 24 * time.Hour, DeadLetters: 30 * 24 * time.Hour}: time.Minute,
		{Runs: 5 * time.Second}:                 time.Second,
		{Runs: 0, DeadLetters: 5 * time.Minute}: 30 * time.Second,
		{}:                                      time.Minute,
		{Runs: 100 * time.Second, DeadLetters: time.Hour}: 10 * time.Second,
	} {
		if got := Interval(p); got != want {
			t.Errorf("Interval(%+v) = %v, want %v", p, got, want)
		}
	}
}

func TestRetentionRunnerAge(t *testing.T) {
	if RunnerAge(10*time.Second) != time.Hour || RunnerAge(2*time.Minute) != 2*time.Hour {
		t.Fatal(RunnerAge(10*time.Second), RunnerAge(2*time.Minute))
	}
}

func TestSweeperSweepsOnlyWhileItHolds(t *testing.T) {
	s := memory.New()
	finishedRuns(t, s, 3)
	var holds atomic.Bool
	sw := New(Options{Store: later{s, 2 * time.Hour}, Policy: Policy{Runs: time.Hour}, Interval: 20 * time.Millisecond, Holds: holds.Load})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sw.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(150 * time.Millisecond)
	if st := sw.Stats(); st.Passes != 0 || st.Sweeping || len(st.Deleted) != 0 {
		t.Fatalf("a sweeper that does not hold the shard sweeps nothing: %+v", st)
	}
	holds.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for sw.Stats().Passes == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := sw.Stats()
	if st.Passes == 0 || !st.Sweeping || st.Deleted[store.TableExecutions] != 3 || st.LastPassRows == 0 || st.LastError != "" {
		t.Fatalf("once it holds the shard it sweeps: %+v", st)
	}
	// the unfinished run's start message is claimed, nothing finished is
	// left: no oldest finished run or processed message
	ages := st.OldestAges(time.Now())
	if len(ages) != 0 {
		t.Fatalf("oldest kept after the pass: %v", ages)
	}
}
