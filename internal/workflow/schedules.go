package workflow

// Cluster coordination of schedules (schedule.ClusterFirer): every
// instance follows the schedule's ticks, and at each tick the instance that
// holds the schedule's shard starts a workflow keyed name@tick, which runs
// the function once. The key makes a tick's run unique however ownership
// moves; a new owner looks back at ticks it saw while not owning and fires
// (catch-up) or records them missed if nobody started them.

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/schedule"
)

// lookBack is how far a new owner looks for ticks nobody started.
const lookBack = time.Minute

// ScheduleCluster registers the workflow schedule/<name> and follows the
// schedule's ticks until ctx ends (schedule.ClusterFirer).
func (w *Engine) ScheduleCluster(ctx context.Context, cs schedule.ClusterSchedule) error {
	name := "schedule/" + cs.Name
	err := w.Register(name, func(c *Context, input []byte) ([]byte, error) {
		var at time.Time
		if err := json.Unmarshal(input, &at); err != nil {
			return nil, errs.Wrap(errs.CodeDecode, err, "schedule tick")
		}
		_, err := c.Step("fire", func(ctx context.Context) ([]byte, error) {
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
	var pending []time.Time // ticks seen while another runner owned the shard
	cursor := w.clk.Now()
	for {
		at := cs.Spec.Next(cursor)
		if at.IsZero() {
			return
		}
		if w.clk.SleepUntil(ctx, at) != nil {
			return
		}
		cursor = at
		if w.e.Runner().Epoch(shard) == 0 {
			pending = append(pending, at)
			for len(pending) > 0 && w.clk.Now().Sub(pending[0]) > lookBack {
				pending = pending[1:]
			}
			continue
		}
		for _, p := range pending {
			key := cs.Key(p)
			if _, err := w.Get(ctx, ExecutionID(name, key)); err == nil {
				continue // its owner started it
			}
			if cs.CatchUp {
				w.startTick(ctx, name, key, p, log)
			} else if err := cs.Missed(ctx, p); err != nil {
				log.Warn("recording a missed tick failed", "at", p, "err", err)
			}
		}
		pending = pending[:0]
		w.startTick(ctx, name, cs.Key(at), at, log)
	}
}

func (w *Engine) startTick(ctx context.Context, name, key string, at time.Time, log *slog.Logger) {
	input, _ := json.Marshal(at)
	if _, _, err := w.Start(ctx, name, input, StartOptions{Key: key, Source: "schedule"}); err != nil {
		log.Warn("starting the tick's run failed", "at", at, "err", err)
	}
}
