// The body of `voltro bench cdc`: write-to-remote-delivery latency and
// delivered events/s between two feeds (two instances) on one database,
// printed beside the database's own single-row commit rate from the same run.

package cdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// BenchConfig bounds a benchmark run.
type BenchConfig struct {
	URL, Dialect   string
	ReplicationURL string
	// Samples is the number of sequential write -> delivery round trips
	// (default 500).
	Samples int
	// Events is the number of rows written concurrently for the rate
	// (default 10000) by Writers connections (default 4), BatchSize rows per
	// transaction (default 1).
	Events, Writers, BatchSize int
	// CommitProbe is how long each database commit-rate probe runs
	// (default 1 s).
	CommitProbe time.Duration
	Logger      *slog.Logger
}

// BenchResult is what a run measured.
type BenchResult struct {
	Dialect   store.Dialect
	Transport string
	// sequential: one write, wait for the remote delta, next write
	Samples       int
	P50, P99, Max time.Duration
	// concurrent: Events rows from Writers writers, until the remote
	// subscriber has them all
	Events, Writers, BatchSize int
	Elapsed                    time.Duration
	EventsPerSec               float64
	LoadP50, LoadP99           time.Duration
	Resyncs                    int64
	// the database alone: autocommit single-row INSERTs on a table without
	// triggers, on 1 and on Writers connections
	DBCommitsPerSec1, DBCommitsPerSecN float64
}

const benchTable = "voltro_cdc_bench"

// RunBench opens a writer and a reader instance against cfg.URL and measures.
func RunBench(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	cfg.defaults()
	var res BenchResult
	open := func(replica string) (*Feed, error) {
		return Open(ctx, Config{URL: cfg.URL, Dialect: cfg.Dialect, ReplicationURL: cfg.ReplicationURL,
			ReplicaID: replica, Ephemeral: true, Buffer: cfg.Events + cfg.Samples + 1024, Logger: cfg.Logger})
	}
	w, err := open("bench-writer")
	if err != nil {
		return res, err
	}
	defer w.Close()
	r := w
	if w.Transport().CrossInstance() {
		if r, err = open("bench-reader"); err != nil {
			return res, err
		}
		defer r.Close()
	}
	res.Dialect, res.Transport = w.Dialect(), w.Flavor()
	res.Events, res.Writers, res.BatchSize, res.Samples = cfg.Events, cfg.Writers, cfg.BatchSize, cfg.Samples
	for _, t := range []string{benchTable, benchTable + "_plain"} {
		if err := rowsql.CreateSerialTable(ctx, w.DB(), w.sqlw, t); err != nil {
			return res, fmt.Errorf("bench table: %w", err)
		}
	}
	defer rowsql.DropTable(context.WithoutCancel(ctx), w.DB(), benchTable+"_plain") //nolint:errcheck

	if res.DBCommitsPerSec1, err = commitRate(ctx, w, 1, cfg.CommitProbe); err != nil {
		return res, err
	}
	if res.DBCommitsPerSecN, err = commitRate(ctx, w, cfg.Writers, cfg.CommitProbe); err != nil {
		return res, err
	}

	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := r.Subscribe(subCtx, benchTable, nil)
	if err != nil {
		return res, err
	}
	lat, err := sequential(ctx, w, ch, cfg.Samples)
	if err != nil {
		return res, err
	}
	res.P50, res.P99, res.Max = percentile(lat, 50), percentile(lat, 99), percentile(lat, 100)

	if err := concurrent(ctx, w, ch, cfg, &res); err != nil {
		return res, err
	}
	res.Resyncs = r.Overflows()
	return res, nil
}

func (c *BenchConfig) defaults() {
	if c.Samples <= 0 {
		c.Samples = 500
	}
	if c.Events <= 0 {
		c.Events = 10000
	}
	if c.Writers <= 0 {
		c.Writers = 4
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1
	}
	if c.CommitProbe <= 0 {
		c.CommitProbe = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// commitRate runs autocommit single-row INSERTs on conns connections.
func commitRate(ctx context.Context, f *Feed, conns int, d time.Duration) (float64, error) {
	q := rowsql.PlainInsert(f.sqlw, benchTable+"_plain", "sent_ns", "payload")
	var (
		n    atomic.Int64
		wg   sync.WaitGroup
		errp atomic.Pointer[error]
	)
	stop := time.Now().Add(d)
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if _, err := f.DB().ExecContext(ctx, q, time.Now().UnixNano(), "commit-rate"); err != nil {
					errp.Store(&err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if p := errp.Load(); p != nil {
		return 0, fmt.Errorf("commit rate: %w", *p)
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

// sequential writes one row at a time and waits for its remote delta.
func sequential(ctx context.Context, w *Feed, ch <-chan delta.Delta, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for i := range n + 20 { // 20 warm-up rounds
		sent := time.Now()
		row, err := w.Insert(ctx, benchTable, delta.Row{"sent_ns": sent.UnixNano(), "payload": "latency"})
		if err != nil {
			return nil, err
		}
		want := delta.Text(row["id"])
		for {
			d, err := recvDelta(ctx, ch, 10*time.Second)
			if err != nil {
				return nil, fmt.Errorf("sequential round %d: %w", i, err)
			}
			if d.Op == delta.Insert && delta.Text(d.Key["id"]) == want {
				break
			}
		}
		if i >= 20 {
			lat = append(lat, time.Since(sent))
		}
	}
	return lat, nil
}

// concurrent writes cfg.Events rows from cfg.Writers writers and waits until
// the subscriber has them all.
func concurrent(ctx context.Context, w *Feed, ch <-chan delta.Delta, cfg BenchConfig, res *BenchResult) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		errp atomic.Pointer[error]
	)
	start := time.Now()
	per := cfg.Events / cfg.Writers
	for i := range cfg.Writers {
		n := per
		if i == 0 {
			n += cfg.Events - per*cfg.Writers
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := writeRows(wctx, w, n, cfg.BatchSize); err != nil && wctx.Err() == nil {
				errp.Store(&err)
				cancel()
			}
		}()
	}
	lat := make([]time.Duration, 0, cfg.Events)
	var last time.Time
	for got := 0; got < cfg.Events; {
		d, err := recvDelta(wctx, ch, 30*time.Second)
		if err != nil {
			if p := errp.Load(); p != nil {
				err = *p
			}
			return fmt.Errorf("concurrent phase, %d of %d delivered: %w", got, cfg.Events, err)
		}
		if d.Op == delta.Resync {
			return errs.New(errs.CodeInternal, "bench subscriber was told to resync: %s", d.Reason)
		}
		if d.Op != delta.Insert {
			continue
		}
		got++
		last = time.Now()
		if ns, ok := d.Row["sent_ns"].(int64); ok {
			lat = append(lat, last.Sub(time.Unix(0, ns)))
		}
	}
	wg.Wait()
	res.Elapsed = last.Sub(start)
	res.EventsPerSec = float64(cfg.Events) / res.Elapsed.Seconds()
	res.LoadP50, res.LoadP99 = percentile(lat, 50), percentile(lat, 99)
	return nil
}

func writeRows(ctx context.Context, w *Feed, n, batch int) error {
	for n > 0 {
		k := min(batch, n)
		n -= k
		if k == 1 {
			if _, err := w.Insert(ctx, benchTable, delta.Row{"sent_ns": time.Now().UnixNano(), "payload": "rate"}); err != nil {
				return err
			}
			continue
		}
		err := w.Tx(ctx, func(tx *Tx) error {
			for range k {
				if _, err := tx.Insert(ctx, benchTable, delta.Row{"sent_ns": time.Now().UnixNano(), "payload": "rate"}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func recvDelta(ctx context.Context, ch <-chan delta.Delta, limit time.Duration) (delta.Delta, error) {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case d, ok := <-ch:
		if !ok {
			return d, errors.New("subscription closed")
		}
		return d, nil
	case <-t.C:
		return delta.Delta{}, fmt.Errorf("no delta within %v", limit)
	case <-ctx.Done():
		return delta.Delta{}, ctx.Err()
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

// String renders the result for the CLI.
func (r BenchResult) String() string {
	var b strings.Builder
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	fmt.Fprintf(&b, "cdc bench: dialect=%s transport=%s\n", r.Dialect, r.Transport)
	fmt.Fprintf(&b, "  write -> remote delivery, sequential (%d): p50 %s  p99 %s  max %s\n", r.Samples, ms(r.P50), ms(r.P99), ms(r.Max))
	fmt.Fprintf(&b, "  delivered to a remote subscriber: %.0f events/s (%d events, %d writers, %d rows/tx, %s); latency under load p50 %s  p99 %s; resyncs %d\n",
		r.EventsPerSec, r.Events, r.Writers, r.BatchSize, r.Elapsed.Round(time.Millisecond), ms(r.LoadP50), ms(r.LoadP99), r.Resyncs)
	fmt.Fprintf(&b, "  database alone, single-row autocommit INSERTs: %.0f commits/s on 1 connection, %.0f on %d\n",
		r.DBCommitsPerSec1, r.DBCommitsPerSecN, r.Writers)
	return b.String()
}
