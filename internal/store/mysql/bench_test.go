// Benchmarks: the database's own commit rate (the physical limit) next to a
// message round trip through the store (enqueue claimed + complete).
package mysql_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

// parallel runs op b.N times spread over n goroutines and reports ops/s.
func parallel(b *testing.B, n int, op func(ctx context.Context, g int) error) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	b.ResetTimer()
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := op(ctx, g); err != nil {
					once.Do(func() { b.Error(err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkCommitRate is a loop of single-row autocommit INSERTs on the
// store's pool: one commit each.
func BenchmarkCommitRate(b *testing.B) {
	s, _ := fresh(b, "mybench_commit", quiet)
	if _, err := s.DB().Exec("CREATE TABLE bench_commit (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB"); err != nil {
		b.Fatal(err)
	}
	for _, conns := range []int{1, 8} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			parallel(b, conns, func(ctx context.Context, g int) error {
				_, err := s.DB().ExecContext(ctx, "INSERT INTO bench_commit (v) VALUES (?)", g)
				return err
			})
		})
	}
}

// BenchmarkRoundTrip is one message through the store as a shard owner sends
// it: Enqueue claimed at insert, then Complete with a reply (two commits).
// complete=batch sends Complete's transaction as one multi-statement round
// trip (the default); complete=tx is the plain transaction used when the URL
// turns multi-statement queries off.
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	s, url := fresh(b, "mybench_rt", quiet)
	stores := map[string]*mysql.Store{"batch": s, "tx": open(b, url+"?multiStatements=false", quiet)}
	l, err := s.NewLocker(ctx, store.LockAdvisory, "bench:1")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	epochs := map[string]int64{}
	for i := 0; i < 8; i++ {
		sh := fmt.Sprintf("default/%d", i)
		e, ok, err := l.Acquire(ctx, sh, time.Minute)
		if err != nil || !ok {
			b.Fatalf("acquire %s: %v %v", sh, ok, err)
		}
		epochs[sh] = e
	}
	payload := []byte(`{"step":1,"input":41}`)
	for _, gs := range []int{1, 8} {
		for _, mode := range []string{"batch", "tx"} {
			s := stores[mode]
			b.Run(fmt.Sprintf("complete=%s/goroutines=%d", mode, gs), func(b *testing.B) {
				parallel(b, gs, func(ctx context.Context, g int) error {
					sh := fmt.Sprintf("default/%d", g)
					m := &store.Message{Shard: sh, EntityType: "workflow/bench", EntityID: "x", Tag: "run", Payload: payload}
					r, err := s.Enqueue(ctx, m, &store.EnqueueClaim{Owner: "bench:1", Epoch: epochs[sh], ClaimTTL: time.Minute})
					if err != nil {
						return err
					}
					if r.ClaimedEpoch == 0 {
						return fmt.Errorf("message %d was not claimed at insert", r.ID)
					}
					return s.Complete(ctx, store.Completion{MessageID: r.ID, Shard: sh, Fence: store.Fence{Owner: "bench:1", Epoch: r.ClaimedEpoch}, Payload: []byte("42")})
				})
			})
		}
	}
}

// BenchmarkListRuns1M is the runs listing (the dashboard's Workflows
// panel) over a million finished runs, seeded once into a kept database.
func BenchmarkListRuns1M(b *testing.B) {
	s := open(b, testdb.MariaDBKept(b, "listruns_mix"), mysql.Options{MaxConns: 4})
	if err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	storetest.BenchListRuns(b, s)
}
