package delivery

// Shard lifecycle as the runner reports it: gained, lost, drained.

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// ShardAcquired starts serving shard at epoch and reads its backlog.
func (x *Deliverer) ShardAcquired(shard string, epoch int64) {
	x.mu.Lock()
	if old := x.shards[shard]; old != nil {
		old.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	x.shards[shard] = &shardState{epoch: epoch, ctx: ctx, cancel: cancel, claimed: map[int64]bool{}}
	x.mu.Unlock()
	x.Wake()
}

// ShardLost stops the shard's entities at once and releases every claim we
// held on it in the background. Nothing waits for that release: a claim
// made under the lost epoch is void for whoever takes the shard next
// (Claim skips claims of an older epoch), and the database may be why the
// shard was lost. A release that waited on a node that does not answer
// would keep the runner, which calls this for every shard it loses, acting
// for shards whose leases have run out; one that fails is retried by Beat.
func (x *Deliverer) ShardLost(shard string, epoch int64, _ string) {
	x.mu.Lock()
	st := x.shards[shard]
	if st == nil || st.epoch != epoch {
		x.mu.Unlock()
		return
	}
	delete(x.shards, shard)
	st.cancel()
	x.dropQueuedLocked(shard, epoch)
	ids := keys(st.claimed) // queued and running: running handlers are cancelled and their writes fenced
	x.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	x.releases.Add(1)
	go func() {
		defer x.releases.Done()
		x.abandon(context.Background(), store.Fence{Owner: x.opts.Owner, Epoch: epoch}, ids...)
	}()
}

// DrainShard stops claiming for the shard, drops what is queued, waits for
// running handlers (bounded by ctx), then releases what is left.
func (x *Deliverer) DrainShard(ctx context.Context, shard string, epoch int64) {
	x.mu.Lock()
	st := x.shards[shard]
	if st == nil || st.epoch != epoch {
		x.mu.Unlock()
		return
	}
	st.draining = true
	queued := x.dropQueuedLocked(shard, epoch)
	x.mu.Unlock()
	// Release what has not started yet, right away.
	x.release(ctx, store.Fence{Owner: x.opts.Owner, Epoch: epoch}, queued)

	done := make(chan struct{})
	go func() { st.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		x.log.Warn("delivery: handlers still running at handover; cancelling them", "shard", shard)
	}
	x.mu.Lock()
	if x.shards[shard] == st {
		delete(x.shards, shard)
	}
	st.cancel()
	rest := keys(st.claimed)
	x.mu.Unlock()
	x.release(context.Background(), store.Fence{Owner: x.opts.Owner, Epoch: epoch}, rest)
}

// Beat extends our claims; called on every heartbeat.
func (x *Deliverer) Beat(ctx context.Context) {
	x.mu.Lock()
	n := x.inFlight
	back := x.giveBack
	x.giveBack = nil
	x.mu.Unlock()
	// Claims given up first, so the extension below does not keep them.
	for f, ids := range back {
		if !x.release(ctx, f, ids) {
			x.mu.Lock()
			if x.giveBack == nil {
				x.giveBack = map[store.Fence][]int64{}
			}
			x.giveBack[f] = append(x.giveBack[f], ids...)
			x.mu.Unlock()
		}
	}
	if n == 0 {
		return
	}
	if err := x.d.ExtendClaims(ctx, x.opts.Owner, x.opts.ClaimTTL); err != nil {
		x.log.Warn("delivery: extending claims failed", "err", err)
	}
}

// StopShards cancels every shard (shutdown after the runner left).
func (x *Deliverer) StopShards(wait time.Duration) {
	x.mu.Lock()
	var all []*shardState
	for s, st := range x.shards {
		all = append(all, st)
		delete(x.shards, s)
	}
	x.mu.Unlock()
	// One deadline for every wait below (a channel from time.After would
	// fire for one of them only).
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, st := range all {
		done := make(chan struct{})
		go func() { st.running.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
		}
		st.cancel()
	}
	released := make(chan struct{})
	go func() { x.releases.Wait(); close(released) }()
	select {
	case <-released:
	case <-ctx.Done():
	}
}

func keys(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	return out
}
