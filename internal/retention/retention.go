package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// Policy is the retention in force; a zero duration keeps that kind for
// ever.
type Policy struct {
	// Runs is how long a finished run, and a processed message, is kept
	// after it finished (VOLTRO_RETENTION).
	Runs time.Duration
	// DeadLetters is how long a dead letter is kept (VOLTRO_DEAD_LETTER_RETENTION).
	DeadLetters time.Duration
	// Runners is how long the row of a runner whose heartbeat stopped is
	// kept (RunnerAge).
	Runners time.Duration
}

// RunnerAge is how long a silent runner's row is kept: an hour, or 60
// heartbeats if longer. The live runners prune such rows themselves after
// 60 heartbeats (10 minutes by default); the sweep is the backstop for
// when none runs, and for `voltro gc`.
func RunnerAge(heartbeat time.Duration) time.Duration { return max(time.Hour, 60*heartbeat) }

// Requests are the sweeps of a pass as of now (the store's clock), one per
// kind the policy does not keep for ever, in store.SweepKinds order.
func (p Policy) Requests(now time.Time) []store.SweepRequest {
	var out []store.SweepRequest
	var dead time.Time
	if p.DeadLetters > 0 {
		dead = now.Add(-p.DeadLetters)
	}
	for _, k := range store.SweepKinds {
		var keep time.Duration
		switch k {
		case store.SweepRuns, store.SweepProcessed:
			keep = p.Runs
		case store.SweepDead:
			keep = p.DeadLetters
		case store.SweepRunners:
			keep = p.Runners
		}
		if keep <= 0 {
			continue
		}
		out = append(out, store.SweepRequest{Kind: k, Before: now.Add(-keep), DeadBefore: dead})
	}
	return out
}

// PassOptions tune one pass.
type PassOptions struct {
	Limit int // rows of a kind per batch; 0 is store.DefaultSweepLimit
	// Pause is the least wait between two batches; each wait is also at
	// least twice as long as the batch before it took, so a pass has the
	// database at most a third of the time, and slows down by itself when
	// the database is busy (its batches take longer).
	Pause  time.Duration
	DryRun bool
	// Continue, when set, is asked before every batch: false ends the pass
	// (the instance no longer holds the retention shard).
	Continue func() bool
}

// KindResult is what a pass did for one kind.
type KindResult struct {
	Kind    store.SweepKind  `json:"kind"`
	Before  time.Time        `json:"before"`
	Batches int              `json:"batches"`
	Rows    map[string]int64 `json:"rows"`
}

// Result is what a pass did.
type Result struct {
	Now    time.Time    `json:"now"` // the store's clock at the start
	DryRun bool         `json:"dryRun"`
	Kinds  []KindResult `json:"kinds"`
	// Stopped: the pass ended early (Continue said no, or ctx ended).
	Stopped bool `json:"stopped,omitempty"`
}

// Total is the rows of table over every kind.
func (r Result) Total(table string) int64 {
	var n int64
	for _, k := range r.Kinds {
		n += k.Rows[table]
	}
	return n
}

// Store is what a pass needs of a store.
type Store interface {
	Now(ctx context.Context) (time.Time, error)
	store.Retention
}

// Pass sweeps every kind of p once, to the end or until opts.Continue says
// no, batch by batch, calling batch (when not nil) after each one.
func Pass(ctx context.Context, d Store, p Policy, opts PassOptions, batch func(store.SweepKind, store.SweepBatch)) (Result, error) {
	now, err := d.Now(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("retention: reading the store's clock: %w", err)
	}
	res := Result{Now: now, DryRun: opts.DryRun}
	first, wait := true, opts.Pause
	for _, req := range p.Requests(now) {
		req.Limit, req.DryRun = opts.Limit, opts.DryRun
		kr := KindResult{Kind: req.Kind, Before: req.Before, Rows: map[string]int64{}}
		for {
			if !first {
				// the pause comes before the check: ownership may have
				// moved meanwhile
				if err := sleep(ctx, wait); err != nil {
					res.Stopped = true
					res.Kinds = append(res.Kinds, kr)
					return res, nil
				}
			}
			first = false
			if opts.Continue != nil && !opts.Continue() {
				res.Stopped = true
				res.Kinds = append(res.Kinds, kr)
				return res, nil
			}
			began := time.Now()
			b, err := d.Sweep(ctx, req)
			wait = max(opts.Pause, 2*time.Since(began))
			if err != nil {
				res.Kinds = append(res.Kinds, kr)
				if ctx.Err() != nil {
					res.Stopped = true
					return res, nil
				}
				return res, fmt.Errorf("retention: sweeping %s: %w", req.Kind, err)
			}
			kr.Batches++
			for t, n := range b.Rows {
				kr.Rows[t] += n
			}
			if batch != nil {
				batch(req.Kind, b)
			}
			if !b.More {
				break
			}
			if req.DryRun {
				if b.Next == "" || b.Next == req.After {
					return res, fmt.Errorf("retention: the dry run of %s does not advance (cursor %q)", req.Kind, b.Next)
				}
				req.After = b.Next
			}
		}
		res.Kinds = append(res.Kinds, kr)
	}
	return res, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
