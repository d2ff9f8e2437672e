package retention

// The background sweeper: a pass every Interval, made only while Holds
// says this instance holds the retention shard. Ownership is the cluster's
// own (shard locks, epochs, failover); nothing else decides who sweeps.
// Two instances sweeping at once (a hand-over in flight) is harmless: each
// batch is a transaction that re-checks every rule, so they only repeat
// each other's work.

import (
	"context"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/service"
	"github.com/voltro/voltro/internal/store"
)

// Defaults of a Sweeper.
const (
	DefaultPause = 50 * time.Millisecond
	maxInterval  = time.Minute
	minInterval  = time.Second
	// holdCheck is how often a sweeper that does not hold the shard looks
	// again, at most.
	holdCheck = 5 * time.Second
)

// Interval is the pause between passes for p: a tenth of the shortest
// retention, from a second to a minute, so rows go at most ~10% after
// their time.
func Interval(p Policy) time.Duration {
	shortest := time.Duration(0)
	for _, d := range []time.Duration{p.Runs, p.DeadLetters} {
		if d > 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	if shortest == 0 {
		return maxInterval
	}
	return min(max(shortest/10, minInterval), maxInterval)
}

// Options configure a Sweeper.
type Options struct {
	Store  Store
	Policy Policy
	// Interval between passes; 0 is Interval(Policy).
	Interval time.Duration
	Limit    int           // rows of a kind per batch; 0 is store.DefaultSweepLimit
	Pause    time.Duration // least pause between batches; 0 is DefaultPause
	// Holds reports whether this instance may sweep now. Nil: always
	// (one process, or a test).
	Holds  func() bool
	Logger *slog.Logger
}

// Stats is a sweeper's state, for status, inspect and metrics.
type Stats struct {
	Policy Policy
	// Sweeping: this instance held the retention shard at its last look.
	Sweeping bool
	Passes   int64
	LastPass time.Time // when the last pass ended (this machine's clock)
	// LastPassDuration and LastPassRows are the last pass's time and rows
	// deleted.
	LastPassDuration time.Duration
	LastPassRows     int64
	LastError        string
	// Deleted counts rows deleted since start, by table.
	Deleted map[string]int64
	// Oldest is the oldest row kept of each kind after the last pass,
	// read at OldestRead (this machine's clock); zero before a pass.
	Oldest     store.Oldest
	OldestRead time.Time
}

// OldestAges are the ages of the oldest rows kept, as of now: zero for a
// kind none is kept of, or before any pass.
func (s Stats) OldestAges(now time.Time) map[store.SweepKind]time.Duration {
	out := map[store.SweepKind]time.Duration{}
	if s.OldestRead.IsZero() {
		return out
	}
	since := now.Sub(s.OldestRead)
	for k, at := range map[store.SweepKind]time.Time{store.SweepRuns: s.Oldest.Run, store.SweepProcessed: s.Oldest.Processed, store.SweepDead: s.Oldest.Dead} {
		if !at.IsZero() {
			out[k] = s.Oldest.Now.Sub(at) + since
		}
	}
	return out
}

// Sweeper is the background service.
type Sweeper struct {
	loop *service.Loop // Run, from Start to Stop
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	stats Stats
}

// New builds a sweeper; Run starts it.
func New(opts Options) *Sweeper {
	if opts.Interval <= 0 {
		opts.Interval = Interval(opts.Policy)
	}
	if opts.Pause <= 0 {
		opts.Pause = DefaultPause
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Sweeper{opts: opts, log: opts.Logger, stats: Stats{Policy: opts.Policy, Deleted: map[string]int64{}}}
	s.loop = service.NewLoop(func(ctx context.Context) error { s.Run(ctx); return nil })
	return s
}

// Policy is the retention in force on this instance.
func (s *Sweeper) Policy() Policy { return s.opts.Policy }

// Stats returns a copy of the sweeper's state.
func (s *Sweeper) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.stats
	c.Deleted = maps.Clone(s.stats.Deleted)
	return c
}

func (s *Sweeper) holds() bool {
	h := s.opts.Holds == nil || s.opts.Holds()
	s.mu.Lock()
	s.stats.Sweeping = h
	s.mu.Unlock()
	return h
}

// Start makes passes (Run) until Stop.
func (s *Sweeper) Start(ctx context.Context) error { return s.loop.Start(ctx) }

// Stop ends the passes and waits for the one under way.
func (s *Sweeper) Stop(ctx context.Context) error { return s.loop.Stop(ctx) }

// Run makes passes until ctx ends.
func (s *Sweeper) Run(ctx context.Context) {
	check := min(s.opts.Interval, holdCheck)
	var last time.Time
	t := time.NewTimer(check)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.holds() && (last.IsZero() || time.Since(last) >= s.opts.Interval) {
			last = time.Now()
			s.pass(ctx)
		}
		t.Reset(check)
	}
}

// pass makes one pass and records it.
func (s *Sweeper) pass(ctx context.Context) {
	began := time.Now()
	res, err := Pass(ctx, s.opts.Store, s.opts.Policy, PassOptions{Limit: s.opts.Limit, Pause: s.opts.Pause, Continue: s.holds},
		func(_ store.SweepKind, b store.SweepBatch) {
			s.mu.Lock()
			for t, n := range b.Rows {
				s.stats.Deleted[t] += n
			}
			s.mu.Unlock()
		})
	if ctx.Err() != nil {
		return
	}
	var rows int64
	for _, k := range res.Kinds {
		for _, n := range k.Rows {
			rows += n
		}
	}
	o, oerr := s.opts.Store.OldestKept(ctx)
	s.mu.Lock()
	s.stats.Passes++
	s.stats.LastPass, s.stats.LastPassDuration, s.stats.LastPassRows = time.Now(), time.Since(began), rows
	s.stats.LastError = ""
	if err != nil {
		s.stats.LastError = err.Error()
	}
	if oerr == nil {
		s.stats.Oldest, s.stats.OldestRead = o, time.Now()
	}
	s.mu.Unlock()
	switch {
	case err != nil:
		s.log.Warn("retention: sweep failed; the next pass tries again", "err", err, "interval", s.opts.Interval)
	case rows > 0:
		s.log.Info("retention: swept", append([]any{"rows", rows, "took", time.Since(began).Round(time.Millisecond)}, tableAttrs(res)...)...)
	default:
		s.log.Debug("retention: nothing to sweep", "took", time.Since(began).Round(time.Millisecond))
	}
	if oerr != nil && ctx.Err() == nil {
		s.log.Warn("retention: reading the oldest rows kept failed", "err", oerr)
	}
}

// tableAttrs are the rows of a pass per table, as log attributes in a
// stable order.
func tableAttrs(r Result) []any {
	totals := map[string]int64{}
	for _, k := range r.Kinds {
		for t, n := range k.Rows {
			totals[t] += n
		}
	}
	names := make([]string, 0, len(totals))
	for t := range totals {
		names = append(names, t)
	}
	sort.Strings(names)
	var out []any
	for _, t := range names {
		out = append(out, t, totals[t])
	}
	return out
}
