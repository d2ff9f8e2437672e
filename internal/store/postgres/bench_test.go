// Throughput benchmarks: the server's own commit rate (single-row autocommit
// INSERTs) next to the request/reply round trip the engine does, so the
// store's rate can be stated as a ratio of what the database allows.
package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

var benchURL string

func benchStore(b *testing.B) *postgres.Store {
	if benchURL == "" {
		benchURL = testdb.Postgres(b, "pgstorebench")
	}
	s, err := postgres.Open(context.Background(), benchURL, postgres.Options{MaxConns: 10, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}

// parallel runs op b.N times over workers goroutines and reports ops/s.
func parallel(b *testing.B, workers int, op func(ctx context.Context, worker int) error) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := op(ctx, w); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
}

// BenchmarkCommitRate is the database's own rate of single-row autocommit
// INSERTs (one WAL flush each, shared by concurrent committers).
func BenchmarkCommitRate(b *testing.B) {
	s := benchStore(b)
	if _, err := s.Pool().Exec(context.Background(), `CREATE TABLE IF NOT EXISTS bench_commit (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)`); err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("conns=%d", workers), func(b *testing.B) {
			parallel(b, workers, func(ctx context.Context, _ int) error {
				_, err := s.Pool().Exec(ctx, `INSERT INTO bench_commit (v) VALUES ($1)`, "x")
				return err
			})
		})
	}
}

// benchRoundTrip holds a store whose locker owns 8 shards, ready for
// request/reply round trips from up to 8 senders.
type benchRoundTrip struct {
	s      *postgres.Store
	epochs []int64
}

var (
	benchPayload = []byte(`{"order":"o-1","amount":42,"currency":"EUR"}`)
	benchHeaders = map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
)

func newBenchRoundTrip(b *testing.B) *benchRoundTrip {
	s := benchStore(b)
	ctx := context.Background()
	lk, err := s.NewLocker(ctx, store.LockAdvisory, "bench:1")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = lk.Close() })
	rt := &benchRoundTrip{s: s, epochs: make([]int64, 8)}
	for i := range rt.epochs {
		e, ok, err := lk.Acquire(ctx, fmt.Sprintf("default/%d", i), time.Minute)
		if err != nil || !ok {
			b.Fatalf("acquire: %v %v", ok, err)
		}
		rt.epochs[i] = e
	}
	return rt
}

// run is one request/reply as the engine does it when the sender owns the
// shard: Enqueue claimed at insert, then Complete (and GetReply if asked).
func (rt *benchRoundTrip) run(ctx context.Context, w int, replyTo string, getReply bool) error {
	i := w % len(rt.epochs)
	shard := fmt.Sprintf("default/%d", i)
	f := store.Fence{Owner: "bench:1", Epoch: rt.epochs[i]}
	m := &store.Message{Shard: shard, EntityType: "order", EntityID: "o-1", Tag: "Pay", Payload: benchPayload, Headers: benchHeaders, ReplyTo: replyTo}
	res, err := rt.s.Enqueue(ctx, m, &store.EnqueueClaim{Owner: f.Owner, Epoch: f.Epoch, ClaimTTL: time.Minute})
	if err != nil {
		return err
	}
	if res.ClaimedEpoch == 0 {
		return fmt.Errorf("not claimed at insert")
	}
	if err := rt.s.Complete(ctx, store.Completion{MessageID: res.ID, Shard: shard, Fence: f, Payload: []byte(`"ok"`)}); err != nil {
		return err
	}
	if !getReply {
		return nil
	}
	r, err := rt.s.GetReply(ctx, res.ID)
	if err == nil && r == nil {
		err = fmt.Errorf("no reply for %d", res.ID)
	}
	return err
}

// BenchmarkRoundTrip measures request/reply round trips. Variants:
// "+getreply" also reads the reply back; "remote" names another runner as
// the reply waiter, so Complete also sends a NOTIFY.
func BenchmarkRoundTrip(b *testing.B) {
	rt := newBenchRoundTrip(b)
	for _, v := range []struct {
		name     string
		workers  int
		replyTo  string
		getReply bool
	}{
		{"local/senders=1", 1, "bench:1", false},
		{"local/senders=8", 8, "bench:1", false},
		{"local+getreply/senders=8", 8, "bench:1", true},
		{"remote/senders=8", 8, "peer:1", false},
	} {
		b.Run(v.name, func(b *testing.B) {
			parallel(b, v.workers, func(ctx context.Context, w int) error { return rt.run(ctx, w, v.replyTo, v.getReply) })
		})
	}
}

// BenchmarkRoundTripVsCommit alternates short slices of the commit loop and
// of round trips (8 connections / senders each), so both rates are measured
// under the same background load, and reports their ratio. One run takes
// about 5 s whatever -benchtime says.
func BenchmarkRoundTripVsCommit(b *testing.B) {
	rt := newBenchRoundTrip(b)
	pool := rt.s.Pool()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_commit (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)`); err != nil {
		b.Fatal(err)
	}
	const slice, rounds, workers = 400 * time.Millisecond, 6, 8
	measure := func(op func(ctx context.Context, w int) error) float64 {
		var n atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		deadline := time.Now().Add(slice)
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					if err := op(ctx, w); err != nil {
						failed.Store(err)
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		return float64(n.Load()) / time.Since(start).Seconds()
	}
	commit := func(ctx context.Context, _ int) error {
		_, err := pool.Exec(ctx, `INSERT INTO bench_commit (v) VALUES ($1)`, "x")
		return err
	}
	roundTrip := func(ctx context.Context, w int) error { return rt.run(ctx, w, "bench:1", false) }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var commits, trips float64
		for r := 0; r < rounds; r++ {
			commits += measure(commit)
			trips += measure(roundTrip)
		}
		commits, trips = commits/rounds, trips/rounds
		b.ReportMetric(commits, "commits/s")
		b.ReportMetric(trips, "roundtrips/s")
		b.ReportMetric(trips/commits, "ratio")
	}
}

// BenchmarkJournalWrite is one workflow step's durable write (a fenced
// journal entry through WriteRuns), beside BenchmarkCommitRate's plain
// INSERT: the difference is what the fence and the batch cost.
func BenchmarkJournalWrite(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	lk, err := s.NewLocker(ctx, store.LockAdvisory, "bench:1")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = lk.Close() })
	epoch, _, err := lk.Acquire(ctx, "default/1", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	f := store.Fence{Owner: "bench:1", Epoch: epoch}
	id := fmt.Sprintf("wf-bench-%d", time.Now().UnixNano())
	if _, _, _, err := s.StartExecution(ctx, store.Execution{ID: id, Name: "bench", Shard: "default/1", Input: []byte(`1`)}, store.StartContext{},
		&store.Message{Shard: "default/1", EntityType: "workflow/bench", EntityID: id, Tag: "start"}, nil); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	parallel(b, 1, func(ctx context.Context, _ int) error {
		return store.AppendJournal(ctx, s, "default/1", f, store.JournalEntry{ExecutionID: id, Seq: int(seq.Add(1)), Kind: store.JournalStep, Name: "s", Result: []byte(`2`), Attempts: 1, Runner: f.Owner, StartedAt: time.Now()})
	})
}

// BenchmarkListRuns1M is the runs listing (the dashboard's Workflows
// panel) over a million finished runs, seeded once into a kept database.
func BenchmarkListRuns1M(b *testing.B) {
	s, err := postgres.Open(context.Background(), testdb.PostgresKept(b, "listruns_mix"), postgres.Options{MaxConns: 4, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	storetest.BenchListRuns(b, s)
}
