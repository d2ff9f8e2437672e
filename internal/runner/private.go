package runner

// Private mode: single-process runner storage on a shared SQL store
// (VOLTRO_WORKFLOW_RUNNER_STORAGE=memory). The runner writes no runner row,
// lists and surveys nobody, takes no session lock and hands nothing over:
// it owns every shard of its own, private shard space (shard ids carry its
// replica id, see PrivateGroups), so another instance on the same database
// never executes its runs, and a restart with the same replica id takes
// them back at once. The ledger still records each shard's epoch, as a row
// lease of its own, because every write for a shard is fenced by it.

import (
	"context"
	"time"
)

// PrivateGroups maps shard groups to the private groups of replica: shard
// ids no other replica's runner ever computes or owns.
func PrivateGroups(replica string, groups []string) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = PrivateGroup(replica, g)
	}
	return out
}

// PrivateGroup is the private name of one shard group.
func PrivateGroup(replica, group string) string { return "local:" + replica + ":" + group }

// stepPrivate is one pass in private mode: pool probe, lease refresh on the
// heartbeat, and taking whichever of our shards we do not hold yet.
func (r *Runner) stepPrivate(ctx context.Context, now time.Time, beat bool) {
	opctx, cancel := context.WithTimeout(ctx, max(r.opts.Heartbeat, 10*time.Second))
	defer cancel()
	if r.locker == nil || !r.lockHealthy {
		if !r.openLocker(opctx) {
			return
		}
		beat = true
	}
	if beat && len(r.held) > 0 {
		started := time.Now()
		lost, err := r.locker.Refresh(opctx, r.held, r.opts.LeaseTTL)
		if err != nil {
			r.lockFailed(ctx, err)
			return
		}
		for _, s := range lost {
			r.lose(s, "lease refresh: no longer held at our epoch")
		}
		valid := started.Add(r.opts.LeaseTTL - r.opts.LeaseTTL/10)
		for s := range r.held {
			r.validUntil[s] = valid
		}
	}
	if beat && r.pool.lastErr == "" {
		r.cb.Beat(opctx)
	}
	r.expireLeases(now)
	for _, sh := range r.all {
		if r.locker == nil {
			return
		}
		if _, mine := r.held[sh]; !mine && r.acquire(opctx, sh, now) {
			r.moveLog.add(&r.moveLog.acquired, "")
		}
	}
}
