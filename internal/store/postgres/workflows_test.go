// Workflow store conformance on a real server, plus the races and the
// enqueue behaviour a single-threaded suite cannot show: concurrent journal
// writes and starts of one run, and the start message matching Enqueue's.
package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/testdb"
)

// ownShard takes shard for owner on s and returns the fence.
func ownShard(t *testing.T, s *postgres.Store, owner, shard string) store.Fence {
	t.Helper()
	l, err := s.NewLocker(ctxT(t), store.LockRow, owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	epoch, ok, err := l.Acquire(ctxT(t), shard, time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire %s: ok=%v err=%v", shard, ok, err)
	}
	return store.Fence{Owner: owner, Epoch: epoch}
}

// startRun starts run id of workflow order on default/1.
func startRun(ctx context.Context, s *postgres.Store, id string) (store.Execution, bool, store.EnqueueResult, error) {
	m := &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: id, Tag: "start", DedupeKey: "wf-start:" + id}
	return s.StartExecution(ctx, store.Execution{ID: id, Name: "order", Shard: "default/1", Input: []byte(`{}`)},
		store.StartContext{Source: "api"}, m, nil)
}

func mustStart(t *testing.T, s *postgres.Store, id string) store.EnqueueResult {
	t.Helper()
	_, _, res, err := startRun(ctxT(t), s, id)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	return res
}

// Eight writers race for one journal slot, many times over: exactly one
// wins each, the others are told it exists.
func TestJournalAppendRace(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, testdb.Postgres(t, "pgwfrace"))
	f := ownShard(t, s, "me:1", "default/1")
	mustStart(t, s, "wf1")
	const writers, rounds = 8, 25
	for seq := 0; seq < rounds; seq++ {
		var wg sync.WaitGroup
		var ok, exists atomic.Int32
		errc := make(chan error, writers)
		start := make(chan struct{})
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := store.AppendJournal(ctx, s, "default/1", f, store.JournalEntry{
					ExecutionID: "wf1", Seq: seq, Kind: store.JournalStep, Name: "step",
					Result: []byte(fmt.Sprintf(`"writer %d"`, w)), Attempts: 1, Runner: f.Owner,
				})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, errs.ErrAlreadyExists):
					exists.Add(1)
				default:
					errc <- err
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatalf("seq %d: unexpected error: %v", seq, err)
		}
		if ok.Load() != 1 || exists.Load() != writers-1 {
			t.Fatalf("seq %d: %d writes succeeded, %d were told it exists", seq, ok.Load(), exists.Load())
		}
	}
	j, err := s.Journal(ctx, "wf1")
	if err != nil || len(j) != rounds {
		t.Fatalf("journal: %d entries, %v", len(j), err)
	}
}

// Concurrent starts of one run: one inserts and enqueues, the rest get the
// stored run back.
func TestStartExecutionRace(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, testdb.Postgres(t, "pgwfstart"))
	const starters = 8
	var wg sync.WaitGroup
	var fresh atomic.Int32
	start := make(chan struct{})
	for i := 0; i < starters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			x, existing, _, err := startRun(ctx, s, "wf1")
			if err != nil || x.ID != "wf1" || x.Status != store.ExecRunning || x.CreatedAt.IsZero() {
				t.Errorf("start returned %+v, %v", x, err)
			}
			if !existing {
				fresh.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	msgs, err := s.ListMessages(ctx, store.MessageFilter{EntityType: "workflow/order"})
	if fresh.Load() != 1 || err != nil || len(msgs) != 1 {
		t.Fatalf("%d starts were new, %d messages (%v)", fresh.Load(), len(msgs), err)
	}
}

// The start message is inserted, claimed and announced exactly as Enqueue
// does it (the start statement carries its own copy of Enqueue's insert).
func TestStartMessageMatchesEnqueue(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgwfenq")
	s := open(t, url)
	f := ownShard(t, s, "me:1", "default/1")
	w := listen(t, s)
	listening(t, s.DB())

	cases := []struct {
		name  string
		claim *store.EnqueueClaim
		tweak func(m *store.Message)
	}{
		{name: "pending"},
		{name: "claimed", claim: &store.EnqueueClaim{Owner: f.Owner, Epoch: f.Epoch, ClaimTTL: time.Minute}},
		{name: "stale-claim", claim: &store.EnqueueClaim{Owner: f.Owner, Epoch: f.Epoch + 1, ClaimTTL: time.Minute}},
		{name: "delayed", claim: &store.EnqueueClaim{Owner: f.Owner, Epoch: f.Epoch, ClaimTTL: time.Minute},
			tweak: func(m *store.Message) { m.Delay = time.Hour }},
		{name: "headers", tweak: func(m *store.Message) {
			m.Headers = map[string]string{"traceparent": "00-1-2-01"}
			m.Payload, m.ReplyTo = []byte(`{"a":1}`), "me:1"
		}},
	}
	quiet := map[int64]bool{}
	for _, c := range cases {
		ref := &store.Message{Shard: "default/1", EntityType: "ref", EntityID: c.name, Tag: "start", DedupeKey: "ref:" + c.name}
		msg := &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: c.name, Tag: "start", DedupeKey: "wf-start:" + c.name}
		if c.tweak != nil {
			c.tweak(ref)
			c.tweak(msg)
		}
		want, err := s.Enqueue(ctx, ref, c.claim)
		if err != nil {
			t.Fatal(err)
		}
		_, _, got, err := s.StartExecution(ctx, store.Execution{ID: c.name, Name: "order", Shard: "default/1"}, store.StartContext{}, msg, c.claim)
		if err != nil {
			t.Fatal(err)
		}
		if got.Duplicate || (got.ClaimedEpoch == 0) != (want.ClaimedEpoch == 0) || msg.ID != got.ID || msg.State != ref.State {
			t.Fatalf("%s: start %+v (%s), enqueue %+v (%s)", c.name, got, msg.State, want, ref.State)
		}
		a, err := s.GetMessage(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.GetMessage(ctx, got.ID)
		if err != nil {
			t.Fatal(err)
		}
		if a.State != b.State || a.ClaimedBy != b.ClaimedBy || a.ClaimEpoch != b.ClaimEpoch || a.Attempts != b.Attempts ||
			a.ClaimExpiresAt.IsZero() != b.ClaimExpiresAt.IsZero() || a.ReplyTo != b.ReplyTo || string(a.Payload) != string(b.Payload) ||
			fmt.Sprint(a.Headers) != fmt.Sprint(b.Headers) || b.DedupeKey != msg.DedupeKey ||
			a.DeliverAt.Sub(a.CreatedAt).Round(time.Minute) != b.DeliverAt.Sub(b.CreatedAt).Round(time.Minute) {
			t.Fatalf("%s: start message differs from the enqueued one:\n%+v\n%+v", c.name, b, a)
		}
		// Wakes arrive in commit order: one for each pending start, none
		// for a start claimed at insert before it, nor for one not due yet
		// that its shard's owner sent (the owner wakes itself).
		if b.State == store.StatePending && c.name != "delayed" {
			w.await(t, c.name+" start wake", func(wk store.Wake) bool {
				if quiet[wk.ID] {
					t.Errorf("wake for message %d, claimed at insert or the owner's own", wk.ID)
				}
				return wk.Kind == store.WakeMessage && wk.ID == got.ID
			})
		} else {
			quiet[got.ID], quiet[want.ID] = true, true
		}
	}
	// A start whose message key exists already reports the earlier message.
	res := mustStart(t, s, "dup")
	_, existing, res2, err := s.StartExecution(ctx, store.Execution{ID: "dup2", Name: "order", Shard: "default/1"}, store.StartContext{},
		&store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "dup2", DedupeKey: "wf-start:dup"}, nil)
	if err != nil || existing || !res2.Duplicate || res2.ID != res.ID {
		t.Fatalf("start with a taken message key: existing=%v %+v %v", existing, res2, err)
	}
}

// Writes fenced by an epoch the shard has moved past fail, and say so.
func TestWorkflowFenceMoves(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgwffence")
	s := open(t, url)
	old := ownShard(t, s, "a:1", "default/1")
	mustStart(t, s, "wf1")
	if err := store.AppendJournal(ctx, s, "default/1", old, store.JournalEntry{ExecutionID: "wf1", Seq: 0, Kind: store.JournalStep}); err != nil {
		t.Fatal(err)
	}
	adminExec(t, url, `UPDATE voltro_shard_locks SET owner = 'b:1', epoch = epoch + 1 WHERE shard = 'default/1'`)
	if err := store.AppendJournal(ctx, s, "default/1", old, store.JournalEntry{ExecutionID: "wf1", Seq: 1, Kind: store.JournalStep}); !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("journal write after the shard moved: %v", err)
	}
	u := store.ExecutionUpdate{ID: "wf1", Shard: "default/1", Fence: old, Status: store.ExecCompleted}
	if err := store.UpdateExecution(ctx, s, u); !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("update after the shard moved: %v", err)
	}
	now := store.Fence{Owner: "b:1", Epoch: old.Epoch + 1}
	if err := store.AppendJournal(ctx, s, "default/1", now, store.JournalEntry{ExecutionID: "nope", Seq: 0, Kind: store.JournalStep}); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("journal write for an unknown run: %v", err)
	}
	u.ID, u.Fence = "nope", now
	if err := store.UpdateExecution(ctx, s, u); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("update of an unknown run: %v", err)
	}
	if err := store.AppendJournal(ctx, s, "default/1", store.Fence{Epoch: old.Epoch + 1}, store.JournalEntry{ExecutionID: "wf1", Seq: 1}); !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("journal write with no owner: %v", err)
	}
}

// BenchmarkWorkflow is the store side of one 3-step workflow as the engine
// drives it when the starter owns the run's shard: start (message claimed at
// insert), load the run and its journal, journal three steps, complete the
// run, list its children, complete the start message. It reports
// workflows/s and the median latency of one workflow.
func BenchmarkWorkflow(b *testing.B) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, testdb.Postgres(b, "pgwfbench"), postgres.Options{MaxConns: 16, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	lk, err := s.NewLocker(ctx, store.LockAdvisory, "bench:1")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = lk.Close() })
	const shards = 16
	fences := make([]store.Fence, shards)
	for i := range fences {
		e, ok, err := lk.Acquire(ctx, fmt.Sprintf("default/%d", i), time.Minute)
		if err != nil || !ok {
			b.Fatalf("acquire: %v %v", ok, err)
		}
		fences[i] = store.Fence{Owner: "bench:1", Epoch: e}
	}
	var seq atomic.Int64
	input := []byte(`{"order":"o-1","amount":42,"currency":"EUR"}`)
	workflow := func(ctx context.Context) error {
		n := seq.Add(1)
		id := fmt.Sprintf("wf_%d_%d", time.Now().UnixNano(), n)
		shard := fmt.Sprintf("default/%d", n%shards)
		f := fences[n%shards]
		m := &store.Message{Shard: shard, EntityType: "workflow/order", EntityID: id, Tag: "start", DedupeKey: "wf-start:" + id}
		_, _, res, err := s.StartExecution(ctx, store.Execution{ID: id, Name: "order", Shard: shard, Input: input},
			store.StartContext{Source: "api", Subject: "user:7"}, m, &store.EnqueueClaim{Owner: f.Owner, Epoch: f.Epoch, ClaimTTL: time.Minute})
		if err != nil {
			return err
		}
		if res.ClaimedEpoch == 0 {
			return fmt.Errorf("start message not claimed at insert")
		}
		if _, err := s.GetExecution(ctx, id); err != nil {
			return err
		}
		if _, err := s.Journal(ctx, id); err != nil {
			return err
		}
		for step := 0; step < 3; step++ {
			if err := store.AppendJournal(ctx, s, shard, f, store.JournalEntry{ExecutionID: id, Seq: step, Kind: store.JournalStep,
				Name: fmt.Sprint("step", step), Result: []byte(`{"ok":true}`), Attempts: 1, Runner: f.Owner, StartedAt: time.Now()}); err != nil {
				return err
			}
		}
		if err := store.UpdateExecution(ctx, s, store.ExecutionUpdate{ID: id, Shard: shard, Fence: f, Status: store.ExecCompleted,
			Output: []byte(`{"ok":true}`), Runner: f.Owner}); err != nil {
			return err
		}
		if _, err := s.ListExecutions(ctx, store.ExecutionFilter{ParentID: id}); err != nil {
			return err
		}
		return s.Complete(ctx, store.Completion{MessageID: res.ID, Shard: shard, Fence: f})
	}
	for _, workers := range []int{1, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			var next atomic.Int64
			var mu sync.Mutex
			var lat []time.Duration
			var failed atomic.Value
			var wg sync.WaitGroup
			b.ResetTimer()
			began := time.Now()
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []time.Duration
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						if err := workflow(ctx); err != nil {
							failed.Store(err)
							return
						}
						mine = append(mine, time.Since(t0))
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				}()
			}
			wg.Wait()
			elapsed := time.Since(began)
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "workflows/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// beginOwn opens a transaction on a connection of its own (outside any
// store), closed when the test ends.
func beginOwn(t *testing.T, url string) pgx.Tx {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	tx, err := conn.Begin(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// afterBlocking runs setup in a transaction of its own, starts call, waits
// until call is blocked on that transaction's locks, then commits it: call
// then sees a row committed after its statement's snapshot was taken.
func afterBlocking(t *testing.T, url, setup string, call func() error) error {
	t.Helper()
	ctx := ctxT(t)
	tx := beginOwn(t, url)
	if _, err := tx.Exec(ctx, setup); err != nil {
		t.Fatalf("%s: %v", setup, err)
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		var waiting int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never waited on the setup transaction")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return <-done
}

// The writes that wait on a concurrent transaction and then find its row
// committed (invisible to their own snapshot) still answer correctly.
func TestWorkflowWritesAfterWaiting(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgwfwait")
	s := open(t, url)
	f := ownShard(t, s, "me:1", "default/1")

	// A start racing the insert of the same run returns the committed run.
	var got store.Execution
	var existing bool
	err := afterBlocking(t, url, `INSERT INTO voltro_workflow_executions (id, name, shard, idem_key, input)
		VALUES ('wf1', 'order', 'default/1', 'k1', '{"n":1}')`, func() (err error) {
		got, existing, _, err = s.StartExecution(ctx, store.Execution{ID: "wf1", Name: "order", Shard: "default/1", Input: []byte(`{"n":2}`)},
			store.StartContext{}, &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf1", DedupeKey: "wf-start:wf1"}, nil)
		return err
	})
	if err != nil || !existing || got.Key != "k1" || string(got.Input) != `{"n":1}` {
		t.Fatalf("start behind a concurrent insert: existing=%v %+v %v", existing, got, err)
	}
	if msgs, _ := s.ListMessages(ctx, store.MessageFilter{EntityID: "wf1"}); len(msgs) != 0 {
		t.Fatalf("nothing is enqueued for an existing run: %+v", msgs)
	}

	// A start whose message key is taken by a concurrent enqueue reports it.
	var res store.EnqueueResult
	err = afterBlocking(t, url, `INSERT INTO voltro_messages (shard, entity_type, entity_id, dedupe_key)
		VALUES ('default/1', 'workflow/order', 'wf2', 'wf-start:wf2')`, func() (err error) {
		_, existing, res, err = s.StartExecution(ctx, store.Execution{ID: "wf2", Name: "order", Shard: "default/1"},
			store.StartContext{}, &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf2", DedupeKey: "wf-start:wf2"}, nil)
		return err
	})
	msgs, _ := s.ListMessages(ctx, store.MessageFilter{EntityID: "wf2"})
	if err != nil || existing || !res.Duplicate || len(msgs) != 1 || res.ID != msgs[0].ID {
		t.Fatalf("start behind a concurrent message: existing=%v %+v %+v %v", existing, res, msgs, err)
	}

	// An update racing a concurrent finish is refused as already finished.
	err = afterBlocking(t, url, `UPDATE voltro_workflow_executions SET status = 'completed' WHERE id = 'wf2'`, func() error {
		return store.UpdateExecution(ctx, s, store.ExecutionUpdate{ID: "wf2", Shard: "default/1", Fence: f, Status: store.ExecFailed})
	})
	if !errors.Is(err, errs.ErrAlreadyExists) {
		t.Fatalf("update behind a concurrent finish: %v", err)
	}
	// So is a cancel request: nothing is enqueued.
	mustStart(t, s, "wf3")
	var marked bool
	err = afterBlocking(t, url, `UPDATE voltro_workflow_executions SET status = 'failed' WHERE id = 'wf3'`, func() (err error) {
		marked, err = s.RequestCancel(ctx, "wf3", &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf3", Tag: "cancel"})
		return err
	})
	if msgs, _ := s.ListMessages(ctx, store.MessageFilter{EntityID: "wf3"}); err != nil || marked || len(msgs) != 1 {
		t.Fatalf("cancel behind a concurrent finish: marked=%v %v, %d messages", marked, err, len(msgs))
	}
	// A signal racing another of the same name loses; the winner's wake stays alone.
	err = afterBlocking(t, url, `INSERT INTO voltro_workflow_signals (execution_id, name, payload) VALUES ('wf3', 'go', '"first"')`, func() error {
		stored, err := s.SendSignal(ctx, store.Signal{ExecutionID: "wf3", Name: "go", Payload: []byte(`"second"`)},
			&store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf3", Tag: "signal"})
		if err == nil && stored {
			err = fmt.Errorf("the second signal was stored")
		}
		return err
	})
	sig, _ := s.GetSignal(ctx, "wf3", "go")
	if msgs, _ := s.ListMessages(ctx, store.MessageFilter{EntityID: "wf3"}); err != nil || sig == nil || string(sig.Payload) != `"first"` || len(msgs) != 1 {
		t.Fatalf("signal behind a concurrent one: %v %+v, %d messages", err, sig, len(msgs))
	}
}
