package bench

// go test -bench for the workflow workload of `voltro bench workflows`:
// sequential start → result latency and concurrent throughput, each beside
// the database's single-row commit rate measured in the same run.
//
//	go test -run x -bench Workflows -benchtime 2000x ./internal/bench/

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testdb"
)

func BenchmarkWorkflowsPostgres(b *testing.B) { benchWorkflows(b, testdb.Postgres(b, "wfbench")) }

func BenchmarkWorkflowsMariaDB(b *testing.B) { benchWorkflows(b, testdb.MariaDB(b, "wfbench")) }

func benchWorkflows(b *testing.B, url string) {
	ctx := context.Background()
	bl, err := openBaseline(ctx, url, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	app := bl.app
	b.Cleanup(func() { _ = app.Close(context.WithoutCancel(ctx)) })
	if err := app.Register(benchWorkflow); err != nil {
		b.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if err := waitOwned(ctx, app, 60*time.Second); err != nil {
		b.Fatal(err)
	}
	commit := time.Duration(float64(time.Second) / bl.commit1)
	b.Run("sequential", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		starts := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			h, err := benchWorkflow.Start(ctx, app, i)
			if err != nil {
				b.Fatalf("start %d: %v", i, err)
			}
			starts = append(starts, time.Since(t0))
			if v, err := h.Result(ctx); err != nil || v != i+3 {
				b.Fatalf("run %d: %d, %v", i, v, err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		slices.Sort(lat)
		slices.Sort(starts)
		p50 := lat[len(lat)/2]
		b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
		b.ReportMetric(float64(starts[len(starts)/2].Microseconds()), "start-p50-µs")
		b.ReportMetric(float64(p50)/float64(commit), "p50-in-commits")
		b.ReportMetric(bl.commit1, "db-commits/s")
	})
	b.Run("concurrent", func(b *testing.B) {
		b.ResetTimer()
		start := time.Now()
		handles := make([]*voltro.Handle[int], b.N)
		var wg sync.WaitGroup
		errc := make(chan error, b.N)
		for i := range handles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h, err := benchWorkflow.Start(ctx, app, i)
				if err == nil {
					var v int
					if v, err = h.Result(ctx); err == nil && v != i+3 {
						b.Errorf("run %d returned %d", i, v)
					}
				}
				if err != nil {
					errc <- err
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		close(errc)
		for err := range errc {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "workflows/s")
		b.ReportMetric(float64(b.N)/elapsed.Seconds()/bl.commit8, "workflows-per-8conn-commit")
		b.ReportMetric(bl.commit8, "db-commits/s-8conn")
	})
}
