package workflow

// Cluster coordination of schedules (schedule.ClusterFirer): every
// instance follows the schedule's ticks, and at each tick the instance that
// holds the schedule's shard starts a workflow keyed name@tick, which runs
// the function once. The key makes a tick's run unique however ownership
// moves, so the other instances can make sure of it: each tick an instance
// saw while another held the shard is looked up once that holder has had
// takeoverGrace to start it, and started there, late, if it was not (its
// holder died, or was handing the shard over, or its start failed). Every
// instance that was up at the tick does this, so a tick is lost only if
// every one of them stopped before its look-up.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/schedule"
)

const (
	// takeoverGrace is how long after a tick an instance that did not hold
	// the schedule's shard waits before looking the tick's run up.
	takeoverGrace = 3 * time.Second
	// lookBack is how long an instance keeps trying to make sure of a tick
	// (a store that does not answer); a tick it could not is recorded
	// missed.
	lookBack = time.Minute
)

// ScheduleCluster registers the workflow schedule/<name> and follows the
// schedule's ticks until ctx ends (schedule.ClusterFirer).
func (w *Engine) ScheduleCluster(ctx context.Context, cs schedule.ClusterSchedule) error {
	name := "schedule/" + cs.Name
	err := w.Register(name, func(c *Context, input []byte) ([]byte, error) {
		var at time.Time
		if err := json.Unmarshal(input, &at); err != nil {
			return nil, errs.Wrap(errs.CodeDecode, err, "schedule tick")
		}
		again := c.delivery > 1
		_, err := c.Step("fire", func(ctx context.Context) ([]byte, error) {
			// A delivery before this one may have begun the tick and died
			// before its step was journaled: the tick's record says so.
			if again && cs.Begun != nil {
				begun, err := cs.Begun(ctx, at)
				if err != nil {
					c.log.Warn("schedule: cannot tell whether an earlier delivery began the tick; firing it", "at", at, "err", err)
				} else if begun {
					c.log.Info("schedule: the tick was begun by an earlier delivery; not firing it again", "at", at)
					return nil, nil
				}
			}
			return nil, cs.Fire(ctx, at)
		}, RetryPolicy{MaxAttempts: 1})
		return nil, err
	})
	if err != nil {
		return err
	}
	cfg := w.e.Config()
	shard := w.e.ShardOf("", "schedule:"+cs.Name, cfg.Groups[0])
	unhold := w.clk.Hold() // the loop holds the clock while it is awake
	go func() {
		defer unhold()
		w.scheduleLoop(ctx, name, shard, cs)
	}()
	return nil
}

func (w *Engine) scheduleLoop(ctx context.Context, name, shard string, cs schedule.ClusterSchedule) {
	log := w.log.With("schedule", cs.Name, "coordination", "cluster")
	// Ticks to make sure of: seen while another runner held the shard, or
	// whose start failed here. Oldest first.
	var unsure []time.Time
	at := cs.Spec.Next(w.clk.Now())
	for !at.IsZero() || len(unsure) > 0 {
		wake := at
		if len(unsure) > 0 && (wake.IsZero() || unsure[0].Add(takeoverGrace).Before(wake)) {
			wake = unsure[0].Add(takeoverGrace)
		}
		if w.clk.SleepUntil(ctx, wake) != nil {
			return
		}
		now := w.clk.Now()
		owner := w.e.Runner().Epoch(shard) != 0
		// The holder looks its unsure ticks up at once (it may have just
		// taken the shard from one that died); the others after the grace.
		left := unsure[:0]
		for _, p := range unsure {
			if !owner && now.Sub(p) < takeoverGrace {
				left = append(left, p)
				continue
			}
			if !w.makeSure(ctx, name, cs, p, log) {
				if now.Sub(p) < lookBack {
					left = append(left, p)
				} else if err := cs.Missed(ctx, p); err != nil {
					log.Warn("recording a missed tick failed", "at", p, "err", err)
				}
			}
		}
		unsure = left
		if at.IsZero() || now.Before(at) {
			continue // woken for an unsure tick only
		}
		if !owner || !w.startTick(ctx, name, cs.Key(at), at, log) {
			unsure = append(unsure, at)
		}
		at = cs.Spec.Next(at)
	}
}

// makeSure starts tick at's run unless it exists. It reports whether the
// run exists now.
func (w *Engine) makeSure(ctx context.Context, name string, cs schedule.ClusterSchedule, at time.Time, log *slog.Logger) bool {
	key := cs.Key(at)
	_, err := w.Get(ctx, ExecutionID(name, key))
	switch {
	case err == nil:
		return true // its holder started it
	case !errors.Is(err, errs.ErrNotFound):
		log.Warn("looking a tick's run up failed", "at", at, "err", err)
		return false
	}
	log.Info("a tick went by unstarted while the schedule's shard moved; firing it late", "at", at)
	return w.startTick(ctx, name, key, at, log)
}

// startTick starts tick at's run, keyed key (a run of that key that exists
// is left as it is). It reports whether the run exists now.
func (w *Engine) startTick(ctx context.Context, name, key string, at time.Time, log *slog.Logger) bool {
	input, _ := json.Marshal(at)
	if _, _, err := w.Start(ctx, name, input, StartOptions{Key: key, Source: "schedule"}); err != nil {
		if ctx.Err() == nil {
			log.Warn("starting the tick's run failed", "at", at, "err", err)
		}
		return false
	}
	return true
}
