package runner

// Shard balancing: survey the ledger, work out the live set, propose an
// assignment, take what is ours and free, hand over what is someone else's.

import (
	"context"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/sharding"
	"github.com/voltro/voltro/internal/store"
)

// survey returns the ledger and real lock state of every shard.
func (r *Runner) survey(ctx context.Context) (map[string]store.ShardState, error) {
	states, err := r.locker.Survey(ctx, r.all)
	if err != nil {
		return nil, err
	}
	out := make(map[string]store.ShardState, len(r.all))
	for _, st := range states {
		out[st.Shard] = st
	}
	return out, nil
}

func (r *Runner) refreshLive(ctx context.Context, now time.Time) error {
	rs, err := r.d.ListRunners(ctx)
	if err != nil {
		return err
	}
	r.lastList = now
	clear(r.rows)
	live := make([]store.Runner, 0, len(rs))
	hosting := len(r.opts.EntityTypes()) > 0
	listed := make(map[string]bool, len(rs))
	defer r.listed.Store(&listed)
	for _, x := range rs {
		r.rows[x.Address] = x
		listed[x.Address] = true
		if x.Address == r.opts.Address {
			if r.registered {
				r.checkOwnRow(x)
			}
			if hosting {
				live = append(live, x)
			}
			continue
		}
		// A runner that hosts no entity type is a client: it owns no shards.
		if x.Healthy && x.HeartbeatAge < r.expiry() && len(x.EntityTypes) > 0 && hostsAny(x.Groups, r.opts.Groups) {
			live = append(live, x)
		}
	}
	if !slices.EqualFunc(live, r.live, func(a, b store.Runner) bool { return a.Address == b.Address && a.StartedAt.Equal(b.StartedAt) }) {
		r.changedAt = now
	}
	r.live = live
	r.forgetSuspects(now)
	return nil
}

func hostsAny(groups, ours []string) bool {
	if len(groups) == 0 {
		return true
	}
	for _, g := range groups {
		for _, o := range ours {
			if g == o {
				return true
			}
		}
	}
	return false
}

func (r *Runner) balance(ctx, poolctx context.Context, poolOK bool, now time.Time) {
	// The runners are listed on every pass (one small query), so a process
	// that joins, or restarts on its old address, is proposed shards within
	// a tick instead of at the next heartbeat.
	if poolOK {
		if err := r.refreshLive(poolctx, now); err != nil {
			r.log.Warn("workflow runner: listing runners failed", "err", err)
			return
		}
		if r.superseded {
			return
		}
	}
	states, err := r.survey(ctx)
	if err != nil {
		r.lockFailed(ctx, err)
		return
	}
	// A frozen owner's session is ended; its shards then look as a crashed
	// owner's do.
	if r.fenceFrozen(ctx, states, now) {
		if states, err = r.awaitFenced(ctx, states); err != nil {
			r.lockFailed(ctx, err)
			return
		}
	}
	r.suspectLostPeers(states, now)
	r.prune(poolctx, poolOK, states, now)
	r.assign()
	// A free shard proposed to a peer that never takes it: the peer is gone
	// though its row still looks fresh. Propose its shards to the others,
	// at once when its presence lock says so, else after a grace period.
	if r.probePresence(ctx, states, now) {
		r.assign()
	}
	if r.watchUnclaimed(states, now) {
		r.assign()
	}
	r.loseTaken(states)
	r.move(ctx, states, now)
}

// suspectLostPeers suspects every ledger owner whose shard is free: it lost
// its session or lease.
func (r *Runner) suspectLostPeers(states map[string]store.ShardState, now time.Time) {
	for _, st := range states {
		if st.Owner != "" && st.Owner != r.opts.Address && st.Free {
			if !r.isSuspect(st.Owner) {
				r.log.Info("workflow runner: peer lost its shard locks; taking over its shards", "peer", st.Owner)
			}
			r.suspect(st.Owner, now)
		}
	}
}

// loseTaken drops the shards we think we hold that someone else took.
func (r *Runner) loseTaken(states map[string]store.ShardState) {
	for s, e := range r.held {
		if st, ok := states[s]; ok && (st.Owner != r.opts.Address || st.Epoch != e) && !r.releasing[s] {
			r.lose(s, "ledger names another owner or epoch")
		}
	}
}

// move acts on the proposal: takes the free shards proposed to us (in one
// batch where the locker can), hands over those proposed to others, within
// a time budget per pass.
func (r *Runner) move(ctx context.Context, states map[string]store.ShardState, now time.Time) {
	// Free shards proposed to a peer that does not take them within a tick:
	// look at the live set again right away (a peer may have left).
	stuck := false
	var take []string // free shards proposed to us, for a batch acquisition
	var give []string // shards proposed to others, handed over as one group
	defer func() { r.applyMoves(ctx, take, give, states, now) }()
	budget := max(r.opts.Tick, 500*time.Millisecond)
	for _, sh := range r.all {
		if r.locker == nil {
			return // a lock call failed: every shard was dropped; retry next tick
		}
		if time.Since(now) > budget {
			return // a slow store: take the rest on the next pass, keep the cadence
		}
		st := states[sh]
		want := r.assigned[sh]
		_, mine := r.held[sh]
		switch {
		case want == r.opts.Address && !mine:
			if !st.Free && st.Owner != "" && st.Owner != r.opts.Address {
				r.markUnacquired(sh, now)
				continue // the holder hands it over when it sees the proposal
			}
			take = append(take, sh)
		case want != r.opts.Address && mine && !r.releasing[sh] && want != "":
			give = append(give, sh)
		case st.Free && want != r.opts.Address && !mine:
			stuck = true
		}
	}
	if stuck && now.Sub(r.lastList) >= r.opts.Tick {
		r.lastList = time.Time{}
	}
}

// applyMoves hands over give and takes take, as gathered by move.
func (r *Runner) applyMoves(ctx context.Context, take, give []string, states map[string]store.ShardState, now time.Time) {
	if len(give) > 0 {
		r.handover(give)
	}
	if len(take) > 0 && r.locker != nil {
		r.acquireMany(ctx, take, states, now)
	}
}

func (r *Runner) markUnacquired(shard string, now time.Time) {
	if _, ok := r.unacquiredSince[shard]; !ok {
		r.unacquiredSince[shard] = now
	}
}

// assign recomputes the proposal from the live set minus suspects.
func (r *Runner) assign() {
	addrs := make([]string, 0, len(r.live))
	for _, x := range r.live {
		if r.isSuspect(x.Address) && x.Address != r.opts.Address {
			continue
		}
		addrs = append(addrs, x.Address)
	}
	r.assigned = sharding.Assign(r.all, addrs)
	assigned := r.assigned
	r.assignedView.Store(&assigned)
	for s := range r.unacquiredSince {
		if r.assigned[s] != r.opts.Address {
			delete(r.unacquiredSince, s)
		}
	}
}

// acquire tries to take shard and reports whether it did.
func (r *Runner) acquire(ctx context.Context, shard string, now time.Time) bool {
	started := time.Now()
	epoch, ok, err := r.locker.Acquire(ctx, shard, r.opts.LeaseTTL)
	if err != nil {
		r.lockFailed(ctx, err)
		return false
	}
	if !ok {
		r.markUnacquired(shard, now)
		return false
	}
	r.acquired(shard, epoch, started)
	return true
}

// acquireMany takes the free shards proposed to us in one batch (a few
// round trips instead of several per shard: a restart or a failover moves
// 150 shards in one pass).
func (r *Runner) acquireMany(ctx context.Context, shards []string, states map[string]store.ShardState, now time.Time) {
	started := time.Now()
	got, err := r.locker.AcquireMany(ctx, shards, r.opts.LeaseTTL)
	for _, sh := range shards {
		if e, ok := got[sh]; ok {
			r.acquired(sh, e, started)
			r.moveLog.add(&r.moveLog.acquired, states[sh].Owner)
		} else if err == nil {
			r.markUnacquired(sh, now)
		}
	}
	if err != nil {
		r.lockFailed(ctx, err)
	}
}

// acquired records a shard taken at epoch and tells the delivery side.
func (r *Runner) acquired(shard string, epoch int64, started time.Time) {
	delete(r.unacquiredSince, shard)
	r.held[shard] = epoch
	r.heldView.Store(shard, struct{}{})
	r.moves++
	if r.opts.Mode == store.LockRow {
		r.validUntil[shard] = started.Add(r.opts.LeaseTTL - r.opts.LeaseTTL/10)
	}
	r.log.Debug("workflow runner: shard acquired", "shard", shard, "epoch", epoch)
	r.cb.ShardAcquired(shard, epoch)
}

// handover drains the shards' entities, all at once, and releases each
// shard's lock once its drain is done: the shards whose drains finished
// together go in one batch where the locker can (a slow handler on one
// shard holds back only that shard). It runs in the background so the
// survey loop keeps its cadence.
func (r *Runner) handover(shards []string) {
	epochs := make(map[string]int64, len(shards))
	for _, sh := range shards {
		epochs[sh] = r.held[sh]
		r.releasing[sh] = true
	}
	r.handovers.Add(1)
	go func() {
		defer r.handovers.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*r.opts.Heartbeat)
		defer cancel()
		drained := make(chan string, len(epochs))
		for sh, e := range epochs {
			go func() {
				r.cb.DrainShard(ctx, sh, e)
				drained <- sh
			}()
		}
		for left := len(epochs); left > 0; {
			batch := []string{<-drained}
			// Whatever else finished meanwhile goes in the same batch.
			for more := true; more; {
				select {
				case sh := <-drained:
					batch = append(batch, sh)
				case <-time.After(5 * time.Millisecond):
					more = false
				}
			}
			left -= len(batch)
			r.release(ctx, batch, epochs)
		}
	}()
}

// release hands over drained shards still held at their epochs.
func (r *Runner) release(ctx context.Context, shards []string, epochs map[string]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	held := map[string]int64{}
	for _, sh := range shards {
		e := epochs[sh]
		delete(r.releasing, sh)
		if r.held[sh] != e {
			continue
		}
		delete(r.held, sh)
		r.heldView.Delete(sh)
		delete(r.validUntil, sh)
		r.moves++
		held[sh] = e
		r.log.Debug("workflow runner: shard handed over", "shard", sh, "epoch", e)
		r.moveLog.add(&r.moveLog.handed, r.assigned[sh])
	}
	if r.locker == nil || len(held) == 0 {
		return
	}
	if err := r.locker.ReleaseMany(ctx, held); err != nil {
		r.log.Warn("workflow runner: releasing shards failed", "shards", len(held), "err", err)
	}
}
