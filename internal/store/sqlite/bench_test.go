// Benchmarks: a message round trip (enqueue, claim, complete) and the plain
// commit rate of the database file, both on a temp file.

package sqlite_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// BenchmarkRoundTrip measures Enqueue + Claim + Complete of one message.
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, filepath.Join(b.TempDir(), "bench.db"))
	l, err := s.NewLocker(ctx, store.LockRow, "bench:1")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	epoch, ok, err := l.Acquire(ctx, "default/1", time.Hour)
	if err != nil || !ok {
		b.Fatalf("acquire: %v %v", ok, err)
	}
	req := store.ClaimRequest{Owner: "bench:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 1, ClaimTTL: time.Minute}
	payload := []byte(`{"sku":"a-1","qty":2}`)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		m := &store.Message{Shard: "default/1", EntityType: "order", EntityID: strconv.Itoa(i % 100), Tag: "place", Payload: payload}
		if _, err := s.Enqueue(ctx, m, nil); err != nil {
			b.Fatal(err)
		}
		got, err := s.Claim(ctx, req)
		if err != nil || len(got) != 1 {
			b.Fatalf("claim: %v %v", got, err)
		}
		if err := s.Complete(ctx, store.Completion{MessageID: got[0].ID, Shard: "default/1", Fence: store.Fence{Owner: "bench:1", Epoch: epoch}, Payload: []byte(`"ok"`)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "roundtrips/s")
}

// BenchmarkCommitRate measures autocommitted single-row INSERTs.
func BenchmarkCommitRate(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, filepath.Join(b.TempDir(), "bench.db"))
	if _, err := s.DB().ExecContext(ctx, `CREATE TABLE bench_rows (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO bench_rows (v) VALUES (?)`, "row"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
}

// BenchmarkStartExecution measures the start of a run on no queue (the
// hot path the queue columns and indexes must leave as it was): one
// transaction inserting the run, its start context and its start message.
func BenchmarkStartExecution(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, filepath.Join(b.TempDir(), "bench.db"))
	input := []byte(`{"sku":"a-1","qty":2}`)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		id := "wf" + strconv.Itoa(i)
		x := store.Execution{ID: id, Name: "order", Shard: "default/1", Input: input}
		m := &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: id, Tag: store.TagStart, DedupeKey: store.RunStartKey(id)}
		if _, _, _, err := s.StartExecution(ctx, x, store.StartContext{Source: "bench"}, m, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "starts/s")
}
