package runner

// Pool health: the heartbeat and locks ride a reserved connection, so a
// runner whose application pool serves nothing could otherwise keep its
// shards forever. After `threshold` heartbeats without a served query the
// runner steps out; it steps back in after `threshold` good probes in a row.

import (
	"context"
	"time"
)

type poolHealth struct {
	healthy   bool
	threshold int
	lastOK    time.Time
	good      int // consecutive good probes while unhealthy
	lastErr   string
	failures  int64
}

func (r *Runner) probePool(ctx context.Context) {
	p := &r.pool
	now := time.Now()
	if p.lastOK.IsZero() {
		p.lastOK = now
	}
	pctx, cancel := context.WithTimeout(ctx, r.opts.Heartbeat)
	err := r.d.Ping(pctx)
	cancel()
	if err == nil {
		p.lastOK, p.lastErr = now, ""
		if !p.healthy {
			p.good++
			if p.good >= p.threshold {
				p.healthy, p.good = true, 0
				r.registered = false // publish healthy again
				r.log.Info("workflow runner: connection pool serves queries again; rejoining the cluster", "good_probes", p.threshold)
			}
		}
		return
	}
	p.failures++
	p.good = 0
	p.lastErr = err.Error()
	silent := now.Sub(p.lastOK)
	if p.healthy && silent >= time.Duration(p.threshold)*r.opts.Heartbeat {
		p.healthy = false
		r.log.Error("workflow runner: its connection pool has not served a query for "+silent.Round(time.Millisecond).String()+"; releasing every shard and stopping the heartbeat", "err", err, "shards", len(r.held))
	}
}
