package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/errs"
)

// MessagesConfig configures the messages benchmark.
type MessagesConfig struct {
	DBURL      string
	Env        func(string) string // extra environment (may be nil)
	Senders    int                 // concurrent senders for throughput (default 8)
	Duration   time.Duration       // throughput phase length (default 5s)
	Sequential int                 // sequential requests for latency (default 1000)
	Idle       time.Duration       // idle phase for the query rate (default 20s; 0 skips… use -1 to skip)
	Logger     *slog.Logger
}

// MessagesResult holds the figures.
type MessagesResult struct {
	Dialect       string
	Commit1       float64 // single-row autocommit INSERTs/s, 1 connection
	Commit8       float64 // same, 8 connections
	RoundTrips    float64 // persisted request/reply round trips/s with Senders senders
	Senders       int
	SeqP50        time.Duration
	SeqP99        time.Duration
	SeqN          int
	IdleQueriesPS float64 // statements/s issued by one idle runner (server counters)
	IdleNote      string
}

type echoMsg struct {
	N int `json:"n"`
}

// Messages runs the benchmark.
func Messages(ctx context.Context, cfg MessagesConfig) (MessagesResult, error) {
	if cfg.Senders <= 0 {
		cfg.Senders = 8
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.Sequential <= 0 {
		cfg.Sequential = 1000
	}
	if cfg.Idle == 0 {
		cfg.Idle = 20 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var res MessagesResult
	b, err := openBaseline(ctx, cfg.DBURL, cfg.Env, cfg.Logger)
	if err != nil {
		return res, err
	}
	app, dialect := b.app, b.dialect
	defer app.Close(context.WithoutCancel(ctx))
	if len(b.nodes) > 1 {
		return res, errs.New(errs.CodeInvalidArgument, "bench messages measures one server: give one URL, not %d", len(b.nodes))
	}
	res.Dialect, res.Commit1, res.Commit8 = dialect, b.commit1, b.commit8

	echo := voltro.NewEntity("bench.echo", func(ctx context.Context, id string, m echoMsg) (echoMsg, error) {
		return echoMsg{N: m.N + 1}, nil
	})
	if err := app.Register(echo); err != nil {
		return res, err
	}
	if err := app.Start(ctx); err != nil {
		return res, err
	}
	if err := waitOwned(ctx, app, 30*time.Second); err != nil {
		return res, err
	}
	// warm up
	for i := 0; i < 200; i++ {
		if _, err := echo.Request(ctx, app, strconv.Itoa(i), echoMsg{N: i}); err != nil {
			return res, fmt.Errorf("warm-up request: %w", err)
		}
	}

	// sequential latency
	lat := make([]time.Duration, 0, cfg.Sequential)
	for i := 0; i < cfg.Sequential; i++ {
		t0 := time.Now()
		if _, err := echo.Request(ctx, app, "seq-"+strconv.Itoa(i%64), echoMsg{N: i}); err != nil {
			return res, err
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	res.SeqN = len(lat)
	res.SeqP50 = lat[len(lat)/2]
	res.SeqP99 = lat[len(lat)*99/100]

	// throughput with concurrent senders
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	tctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	var wg sync.WaitGroup
	start := time.Now()
	for s := 0; s < cfg.Senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; tctx.Err() == nil; i++ {
				_, err := echo.Request(tctx, app, fmt.Sprintf("s%d-%d", s, i%256), echoMsg{N: i})
				if err != nil {
					if tctx.Err() == nil {
						once.Do(func() { firstErr = err })
					}
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	cancel()
	if firstErr != nil {
		return res, firstErr
	}
	res.Senders = cfg.Senders
	res.RoundTrips = float64(n.Load()) / time.Since(start).Seconds()

	if cfg.Idle > 0 {
		d, _, err := openStore(ctx, cfg.Env, cfg.DBURL)
		if err != nil {
			return res, err
		}
		defer d.Close()
		time.Sleep(3 * time.Second) // let the load's tail settle
		res.IdleQueriesPS, res.IdleNote, err = idleRate(ctx, d, cfg.Idle)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// Print writes the result as a small report.
func (r MessagesResult) Print(w io.Writer) {
	fmt.Fprintf(w, "voltro bench messages — dialect %s\n", r.Dialect)
	fmt.Fprintf(w, "  database commit rate (single-row insert, autocommit): %.0f/s with 1 connection, %.0f/s with 8\n", r.Commit1, r.Commit8)
	fmt.Fprintf(w, "  request/reply round trips, %d senders: %.0f/s  (%.2f × the 8-connection commit rate)\n", r.Senders, r.RoundTrips, r.RoundTrips/r.Commit8)
	fmt.Fprintf(w, "  sequential request/reply (%d): p50 %s, p99 %s  (one commit takes %s at the 1-connection rate)\n", r.SeqN, r.SeqP50.Round(time.Microsecond), r.SeqP99.Round(time.Microsecond), time.Duration(float64(time.Second)/r.Commit1).Round(time.Microsecond))
	if r.IdleQueriesPS > 0 || r.IdleNote != "" {
		fmt.Fprintf(w, "  idle runner: %.2f statements/s (%s)\n", r.IdleQueriesPS, r.IdleNote)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
