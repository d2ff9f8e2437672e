package bench

// voltro bench workflows: the peers' workload (a 3-step workflow whose steps
// add one) measured four ways, beside the database's own commit rate.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/errs"
)

// WorkflowsConfig configures the benchmark.
type WorkflowsConfig struct {
	DBURL      string
	Env        func(string) string
	Sequential int // default 200
	Concurrent int // default 2000
	// Starters is how many goroutines start (b)'s runs, each one run after
	// another: 0 for DefaultStarters (a web tier's concurrent requests);
	// OnePerRun (any negative value), or more than Concurrent, for a
	// goroutine per run (every run started at once).
	Starters int
	// Failover runs the SIGKILL failover and restart-recovery phases with
	// worker processes started from Executable (the voltro binary).
	Failover   bool
	Executable string
	// Retained > 0 also runs phase (b) on a database keeping that many
	// finished runs (seeded in bulk, 8 to 38 days old), alternating with
	// the fresh one: RetainedDB, or <database>_retained beside DBURL,
	// created if missing and reused across runs.
	Retained   int
	RetainedDB string
	Logger     *slog.Logger
}

// WorkflowsResult holds the figures.
type WorkflowsResult struct {
	Dialect        string
	Nodes          int // database nodes, an instance on each (1: one server)
	Commit1        float64
	Commit8        float64
	SeqN           int
	SeqP50, SeqP99 time.Duration
	ConcN          int
	ConcStarters   int // goroutines that started them
	ConcPerSecond  float64
	ConcElapsed    time.Duration
	Failover       time.Duration // kill → completion on a live instance
	FailoverNote   string
	Restart        time.Duration // kill → completion after a fresh start
	RestartNote    string
	Retained       *RetainedResult
}

// Step1 etc. are the benchmark's workflow: three steps, each adds one.
var benchWorkflow = voltro.NewWorkflow("bench.three", func(wc *voltro.WorkflowContext, n int) (int, error) {
	for i := 0; i < 3; i++ {
		v, err := voltro.Step(wc, "add"+strconv.Itoa(i), func(ctx context.Context) (int, error) { return n + 1, nil })
		if err != nil {
			return 0, err
		}
		n = v
	}
	return n, nil
})

// Workflows runs the benchmark.
func Workflows(ctx context.Context, cfg WorkflowsConfig) (WorkflowsResult, error) {
	if cfg.Sequential <= 0 {
		cfg.Sequential = 200
	}
	if cfg.Concurrent <= 0 {
		cfg.Concurrent = 2000
	}
	if cfg.Starters == 0 {
		cfg.Starters = DefaultStarters
	}
	if cfg.Starters < 0 || cfg.Starters > cfg.Concurrent {
		cfg.Starters = cfg.Concurrent
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var res WorkflowsResult
	b, err := openBaseline(ctx, cfg.DBURL, cfg.Env, cfg.Logger)
	if err != nil {
		return res, err
	}
	app := b.app
	defer app.Close(context.WithoutCancel(ctx))
	res.Dialect, res.Commit1, res.Commit8, res.Nodes = b.dialect, b.commit1, b.commit8, len(b.nodes)
	if res.Nodes > 1 && (cfg.Failover || cfg.Retained > 0) {
		return res, errs.New(errs.CodeInvalidArgument, "failover and retained phases measure one server: with %d node URLs, pass --failover=false and no --retained", res.Nodes)
	}
	if err := app.Register(benchWorkflow); err != nil {
		return res, err
	}
	if err := app.Start(ctx); err != nil {
		return res, err
	}
	peers, err := startPeers(ctx, b.nodes[1:], cfg.Env, cfg.Logger, func(a *voltro.App) error { return a.Register(benchWorkflow) })
	if err != nil {
		return res, err
	}
	defer closeAll(ctx, peers)
	apps := append([]*voltro.App{app}, peers...)
	if err := waitSpread(ctx, apps, 60*time.Second); err != nil {
		return res, err
	}
	for i := 0; i < 50; i++ { // warm up
		if _, err := benchWorkflow.Run(ctx, app, i); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
	}

	lat := make([]time.Duration, 0, cfg.Sequential)
	for i := 0; i < cfg.Sequential; i++ {
		t0 := time.Now()
		v, err := benchWorkflow.Run(ctx, app, i)
		if err != nil {
			return res, err
		}
		if v != i+3 {
			return res, fmt.Errorf("workflow returned %d for %d", v, i)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	res.SeqN, res.SeqP50, res.SeqP99 = len(lat), lat[len(lat)/2], lat[len(lat)*99/100]

	if res.ConcPerSecond, res.ConcElapsed, err = concurrent(ctx, apps, cfg.Concurrent, cfg.Starters); err != nil {
		return res, err
	}
	res.ConcN, res.ConcStarters = cfg.Concurrent, cfg.Starters
	if cfg.Retained > 0 {
		r, err := measureRetained(ctx, cfg, app)
		if err != nil {
			return res, fmt.Errorf("retained: %w", err)
		}
		res.Retained = &r
	}

	if cfg.Failover {
		if err := app.Close(ctx); err != nil {
			return res, err
		}
		if res.Failover, res.FailoverNote, err = measureFailover(ctx, cfg, false); err != nil {
			return res, fmt.Errorf("failover: %w", err)
		}
		if res.Restart, res.RestartNote, err = measureFailover(ctx, cfg, true); err != nil {
			return res, fmt.Errorf("restart recovery: %w", err)
		}
	}
	return res, nil
}

func overlay(base func(string) string, extra map[string]string) func(string) string {
	return func(k string) string {
		if base != nil {
			if v := base(k); v != "" {
				return v
			}
		}
		return extra[k]
	}
}

// DefaultStarters and OnePerRun are values of WorkflowsConfig.Starters.
const (
	DefaultStarters = 16
	OnePerRun       = -1
)

// concurrent starts n runs from starters goroutines, spread over apps, and
// waits for all of them: first start → last completion.
func concurrent(ctx context.Context, apps []*voltro.App, n, starters int) (perSecond float64, elapsed time.Duration, err error) {
	if starters <= 0 || starters > n {
		starters = n
	}
	start := time.Now()
	handles := make([]*voltro.Handle[int], n)
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	var next atomic.Int64
	for w := 0; w < starters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				h, err := benchWorkflow.Start(ctx, apps[i%len(apps)], i)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				handles[i] = h
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	for i, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := h.Result(ctx)
			if err == nil && v != i+3 {
				err = fmt.Errorf("workflow returned %d for %d", v, i)
			}
			if err != nil {
				once.Do(func() { firstErr = err })
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	elapsed = time.Since(start)
	return float64(n) / elapsed.Seconds(), elapsed, nil
}

// Print writes the report.
func (r WorkflowsResult) Print(w io.Writer) {
	fmt.Fprintf(w, "voltro bench workflows — dialect %s, a 3-step workflow (each step adds one)\n", r.Dialect)
	if r.Nodes > 1 {
		fmt.Fprintf(w, "  a cluster of %d nodes, an instance on each; runs started round-robin over the instances\n", r.Nodes)
		fmt.Fprintf(w, "  cluster commit rate (single-row insert, autocommit): %.0f/s with 1 connection, %.0f/s with 8 spread over the nodes\n", r.Commit1, r.Commit8)
	} else {
		fmt.Fprintf(w, "  database commit rate (single-row insert, autocommit): %.0f/s with 1 connection, %.0f/s with 8\n", r.Commit1, r.Commit8)
	}
	commit := time.Duration(float64(time.Second) / r.Commit1)
	fmt.Fprintf(w, "  (a) sequential, %d runs start → result: p50 %s, p99 %s  (p50 = %.1f single-row commits)\n", r.SeqN, r.SeqP50.Round(time.Microsecond), r.SeqP99.Round(time.Microsecond), float64(r.SeqP50)/float64(commit))
	fmt.Fprintf(w, "  (b) %d started from %s, first start → last completion: %s = %.0f workflows/s  (%.2f workflows per 8-connection commit)\n", r.ConcN, starters(r.ConcStarters, r.ConcN), r.ConcElapsed.Round(time.Millisecond), r.ConcPerSecond, r.ConcPerSecond/r.Commit8)
	if x := r.Retained; x != nil {
		seeded := "already there"
		if x.Seeded > 0 {
			seeded = fmt.Sprintf("%d seeded in %s", x.Seeded, x.SeedTime.Round(time.Second))
		}
		fmt.Fprintf(w, "  (b') %d started from %s on %s, keeping %d finished runs (%s), alternating with the fresh database:\n", r.ConcN, starters(r.ConcStarters, r.ConcN), x.RetainedDB, x.N, seeded)
		for i := range x.Fresh {
			fmt.Fprintf(w, "       pair %d: fresh %.0f/s (%.2f × 8-conn commit), retained %.0f/s (%.2f ×)\n", i+1, x.Fresh[i], x.Fresh[i]/r.Commit8, x.Retained[i], x.Retained[i]/r.Commit8)
		}
		fmt.Fprintf(w, "       median retained / median fresh = %.2f\n", x.Ratio)
		if len(x.Sweeping) > 0 {
			fmt.Fprintf(w, "  (b'') the same while the retained database's sweeper (retention 7d) deleted %d old runs in %s:\n", x.Swept, x.SweepTime.Round(time.Second))
			for i := range x.SweepFresh {
				fmt.Fprintf(w, "       pair %d: fresh %.0f/s (%.2f × 8-conn commit), retained and sweeping %.0f/s (%.2f ×)\n", i+1, x.SweepFresh[i], x.SweepFresh[i]/r.Commit8, x.Sweeping[i], x.Sweeping[i]/r.Commit8)
			}
			fmt.Fprintf(w, "       median retained and sweeping / median fresh = %.2f\n", x.SweepRatio)
		}
	}
	if r.Failover > 0 {
		fmt.Fprintf(w, "  (c) SIGKILL mid-step → completed on a live instance: %s  (%s)\n", r.Failover.Round(time.Millisecond), r.FailoverNote)
		fmt.Fprintf(w, "  (d) SIGKILL, then a fresh process → completed: %s  (%s)\n", r.Restart.Round(time.Millisecond), r.RestartNote)
	}
}

// starters names how (b)'s runs were started.
func starters(n, runs int) string {
	switch {
	case n >= runs:
		return "a goroutine each (all at once)"
	case n == 1:
		return "1 goroutine"
	}
	return fmt.Sprintf("%d goroutines", n)
}
