// Go benchmarks of write-to-remote-delivery on PostgreSQL and MariaDB, and a small run of the bench body.
package cdc

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/testdb"
)

// benchSize reads VOLTRO_CDC_BENCH_EVENTS (default small, to stay bounded on
// a shared machine).
func benchSize(def int) int {
	if n, err := strconv.Atoi(os.Getenv("VOLTRO_CDC_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return def
}

func runBench(b *testing.B, url string) {
	for _, batch := range []int{1, 10} {
		b.Run(fmt.Sprintf("rows-per-tx=%d", batch), func(b *testing.B) { runBenchBatch(b, url, batch) })
	}
}

func runBenchBatch(b *testing.B, url string, batch int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lg, _ := newLog(b)
	var res BenchResult
	for b.Loop() {
		var err error
		res, err = RunBench(ctx, BenchConfig{URL: url, Samples: 300, Events: benchSize(5000), Writers: 4, BatchSize: batch, Logger: lg})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Log("\n" + res.String())
	b.ReportMetric(float64(res.P50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(res.P99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(res.EventsPerSec, "events/s")
	b.ReportMetric(res.DBCommitsPerSec1, "db-commits/s")
}

// go test -run '^$' -bench CDC -benchtime 1x ./internal/cdc/
func BenchmarkCDCPostgres(b *testing.B) { runBench(b, testdb.Postgres(b, "cdcbench")) }

func BenchmarkCDCMariaDB(b *testing.B) {
	runBench(b, testdb.StartMariaDBBinlog(b).Database(b, "cdcbench"))
}

// The bench body works end to end on a small run (the figures are not
// checked here: the machine is shared).
func TestRunBenchSmall(t *testing.T) {
	res, err := RunBench(context.Background(), BenchConfig{URL: testdb.Postgres(t, "cdcbenchs"), Samples: 20, Events: 200, Writers: 2, BatchSize: 5, CommitProbe: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.String())
	if res.P50 <= 0 || res.EventsPerSec <= 0 || res.DBCommitsPerSec1 <= 0 || res.Transport != "LISTEN/NOTIFY" {
		t.Fatalf("result %+v", res)
	}
}
