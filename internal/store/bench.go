package store

// Support for `voltro bench` (internal/bench): the database's own figures
// to set voltro's beside (its single-row commit rate, the statements it
// serves over an idle window), the sibling database `--retained` keeps its
// history in, and fresh planner statistics after SeedHistory. None of it
// is for production data paths. Each is optional: a store that cannot
// offer one does not implement it, and the benchmark says so.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// BenchCommitTable is the probe table CommitProber writes to. It is the
// benchmark's own, made by the versioned migrations (0700) and emptied
// before and after each measure.
const BenchCommitTable = "voltro_bench_commit"

// BenchCommitMissing names the probe table's origin in CommitRate's error
// when the table cannot be emptied: a database never migrated has none.
const BenchCommitMissing = "commit probe table " + BenchCommitTable + " (made by migration 0700: run voltro migrate)"

// CommitProber is implemented by the SQL stores. CommitRate runs
// autocommitted single-row inserts into BenchCommitTable on conns
// connections of the store's application pool for d, and returns the
// commits per second; the rows are deleted afterwards.
type CommitProber interface {
	CommitRate(ctx context.Context, conns int, d time.Duration) (float64, error)
}

// StatementCounter is implemented by stores whose server counts the
// statements (or transactions) it serves.
type StatementCounter interface {
	// StatementCounter describes the counter.
	StatementCounter() CounterInfo
	// CountStatements reads it (the read is itself counted once).
	CountStatements(ctx context.Context) (float64, error)
}

// CounterInfo says what a StatementCounter counts and how late.
type CounterInfo struct {
	Note string // what it counts, for the report
	// Settle is how long statements already served may take to show in
	// the counter: wait it out before a first reading.
	Settle time.Duration
	// Tail is how long the reading's own statement may take to show: the
	// second reading of a window waits it out, and the window counts it.
	Tail time.Duration
}

// StatementRate reads c around a window of d and returns the statements
// per second the server served in it, less the reading's own: it waits
// out c's Settle first (until the counter settles), and its Tail at the
// end.
func StatementRate(ctx context.Context, c StatementCounter, d time.Duration) (float64, error) {
	info := c.StatementCounter()
	const own = 1.0 // a reading counts itself once, in the next reading
	// Let the load's tail land in the counter before the first reading,
	// then until a Settle interval adds no more than that reading (at most
	// a few intervals): on a loaded machine idle backends report what they
	// did before the window later than Settle (once, five statements of a
	// test's set-up landed in its 30 s window).
	if err := sleep(ctx, info.Settle); err != nil {
		return 0, err
	}
	a, err := c.CountStatements(ctx)
	if err != nil {
		return 0, err
	}
	for i := 0; i < maxSettles && info.Settle > 0; i++ {
		if err := sleep(ctx, info.Settle); err != nil {
			return 0, err
		}
		n, err := c.CountStatements(ctx)
		if err != nil {
			return 0, err
		}
		moved := n - a
		a = n
		if moved <= own {
			break
		}
	}
	if err := sleep(ctx, d+info.Tail); err != nil {
		return 0, err
	}
	b, err := c.CountStatements(ctx)
	if err != nil {
		return 0, err
	}
	return (b - a - own) / (d + info.Tail).Seconds(), nil
}

// maxSettles bounds StatementRate's wait for a settled counter.
const maxSettles = 3

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// DatabaseCreator is implemented by stores on a server that holds several
// databases. CreateDatabase creates database name beside the store's own,
// unless it exists; it does not migrate it.
type DatabaseCreator interface {
	CreateDatabase(ctx context.Context, name string) error
}

// HistoryAnalyzer is implemented by stores with a query planner.
// AnalyzeHistory refreshes the planner's statistics of the tables a
// finished run leaves rows in (after SeedHistory, as autovacuum would some
// time later).
type HistoryAnalyzer interface {
	AnalyzeHistory(ctx context.Context) error
}

// HistoryTables are the tables AnalyzeHistory refreshes.
var HistoryTables = []string{TableExecutions, TableJournal, TableStartContexts, TableRuns, TableRunSteps, TableRunEvents, TableMessages, TableReplies}

// MeasureCommits is the loop of a CommitRate: conns workers, each set up
// by worker (a connection of its own, say) and committing with commit(ctx,
// i) for i = 0, 1, … until d has passed (each at least once, and every
// commit begun in the window is counted). Every worker is set up first,
// under ctx alone: the window times commits, not connecting (which a loaded
// server can take longer than a short window for). It returns the commits
// per second from the window's start to the last commit's end. A failure
// of a setup or of a commit is the measure's error.
func MeasureCommits(ctx context.Context, conns int, d time.Duration,
	worker func(ctx context.Context) (commit func(ctx context.Context, i int) error, done func(), err error)) (float64, error) {
	type ready struct {
		commit func(context.Context, int) error
		done   func()
	}
	ws := make([]ready, conns)
	setupErrs := make([]error, conns)
	var wg sync.WaitGroup
	for c := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[c].commit, ws[c].done, setupErrs[c] = worker(ctx)
		}()
	}
	wg.Wait()
	defer func() {
		for _, w := range ws {
			if w.done != nil {
				w.done()
			}
		}
	}()
	for _, err := range setupErrs {
		if err != nil {
			return 0, err
		}
	}
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	start := time.Now()
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker commits at least once, and a commit begun inside
			// the window is waited for and counted: the rate is the
			// commits over the time they took, never 0 on a server that
			// takes longer than the window for one (a loaded machine).
			for i := 0; i == 0 || time.Since(start) < d; i++ {
				if err := w.commit(ctx, i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}
