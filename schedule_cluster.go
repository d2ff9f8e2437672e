package voltro

// Cluster coordination of schedules: every instance follows the schedule's
// ticks, and at each tick the instance that holds the schedule's shard
// starts a workflow keyed name@tick, which runs the function once. The key
// makes a tick's run unique however ownership moves; a new owner looks back
// at ticks it saw while not owning and fires (catch-up) or records them
// missed if nobody started them.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/schedule"
	"github.com/voltro/voltro/internal/workflow"
)

type clusterFirer struct{ a *App }

// lookBack is how far a new owner looks for ticks nobody started.
const lookBack = time.Minute

func (f *clusterFirer) ScheduleCluster(ctx context.Context, cs schedule.ClusterSchedule) error {
	wf, err := f.a.workflows()
	if err != nil {
		return err
	}
	name := "schedule/" + cs.Name
	err = wf.Register(name, func(c *workflow.Context, input []byte) ([]byte, error) {
		var at time.Time
		if err := json.Unmarshal(input, &at); err != nil {
			return nil, errs.Wrap(errs.CodeDecode, err, "schedule tick")
		}
		_, err := c.Step("fire", func(ctx context.Context) ([]byte, error) {
			return nil, cs.Fire(ctx, at)
		}, workflow.RetryPolicy{MaxAttempts: 1})
		return nil, err
	})
	if err != nil {
		return err
	}
	cfg := f.a.e.Config()
	shard := f.a.e.ShardOf("", "schedule:"+cs.Name, cfg.Groups[0])
	go f.loop(ctx, wf, name, shard, cs)
	return nil
}

func (f *clusterFirer) loop(ctx context.Context, wf *workflow.Engine, name, shard string, cs schedule.ClusterSchedule) {
	log := f.a.log.With("schedule", cs.Name, "coordination", "cluster")
	var pending []time.Time // ticks seen while another runner owned the shard
	cursor := time.Now()
	for {
		at := cs.Spec.Next(cursor)
		if at.IsZero() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		cursor = at
		if f.a.e.Runner().Epoch(shard) == 0 {
			pending = append(pending, at)
			for len(pending) > 0 && time.Since(pending[0]) > lookBack {
				pending = pending[1:]
			}
			continue
		}
		for _, p := range pending {
			key := cs.Key(p)
			if _, err := wf.Get(ctx, workflow.ExecutionID(name, key)); err == nil {
				continue // its owner started it
			}
			if cs.CatchUp {
				f.start(ctx, wf, name, key, p, log)
			} else if err := cs.Missed(ctx, p); err != nil {
				log.Warn("recording a missed tick failed", "at", p, "err", err)
			}
		}
		pending = pending[:0]
		f.start(ctx, wf, name, cs.Key(at), at, log)
	}
}

func (f *clusterFirer) start(ctx context.Context, wf *workflow.Engine, name, key string, at time.Time, log interface {
	Warn(string, ...any)
}) {
	input, _ := json.Marshal(at)
	if _, _, err := wf.Start(ctx, name, input, workflow.StartOptions{Key: key, Source: "schedule"}); err != nil {
		log.Warn("starting the tick's run failed", "at", at, "err", err)
	}
}
