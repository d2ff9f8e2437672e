package runner

// Pruning: the row of a runner whose heartbeat stopped long ago belongs to
// a process that is gone for good (a crashed pod whose next incarnation got
// another address). Any runner removes such rows, so listings, status and
// the live-set computation stay short. The age is documented in
// docs/clustering.md.

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// pruneAfter is how old a heartbeat must be before its row is removed:
// 60 heartbeats, 10 minutes with the default heartbeat.
func (r *Runner) pruneAfter() time.Duration { return 60 * r.opts.Heartbeat }

// prune removes, at most once per heartbeat, the rows of runners silent
// for pruneAfter that own no held shard (a frozen owner is fenced, not
// forgotten).
func (r *Runner) prune(ctx context.Context, poolOK bool, states map[string]store.ShardState, now time.Time) {
	if !poolOK || now.Sub(r.lastPrune) < r.opts.Heartbeat {
		return
	}
	r.lastPrune = now
	holds := map[string]bool{}
	for _, st := range states {
		if !st.Free && st.Owner != "" {
			holds[st.Owner] = true
		}
	}
	for addr, row := range r.rows {
		if addr == r.opts.Address || row.HeartbeatAge < r.pruneAfter() || holds[addr] {
			continue
		}
		if err := r.d.DeleteRunner(ctx, addr); err != nil {
			r.log.Warn("workflow runner: removing a long-silent runner's row failed", "runner", addr, "err", err)
			continue
		}
		delete(r.rows, addr)
		r.pruned++
		r.log.Info("workflow runner: removed the row of a runner silent for good", "runner", addr,
			"replica", row.ReplicaID, "heartbeat_age", row.HeartbeatAge.Round(time.Second))
	}
}
