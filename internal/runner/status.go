package runner

// Graceful leave and the runner's view of itself for health and inspect.

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Leave drains every held shard (entities stop first), releases the locks,
// and removes the runner row, so peers take over without waiting. When the
// database does not answer the first of those calls (bounded by a
// heartbeat), it stops every entity at once and leaves the locks to expire
// or vanish with their session instead: each drain and release would wait
// on it too, and none could reach it.
func (r *Runner) Leave(ctx context.Context) {
	r.mu.Lock()
	r.leaving = true
	held := maps.Clone(r.held)
	r.mu.Unlock()
	r.handovers.Wait()
	// Drop out of the live set first, so peers reassign at once.
	dctx, cancel := context.WithTimeout(ctx, max(r.opts.Heartbeat, time.Second))
	err := r.d.DeleteRunner(dctx, r.opts.Address)
	cancel()
	if err != nil {
		r.log.Warn("workflow runner: removing runner row failed; leaving without draining: peers take the shards once their locks expire or vanish", "err", err, "shards", len(held))
		r.abandonShards("leaving while the database does not answer")
		return
	}
	// Every shard at once, as a handover drains them: one by one, a
	// database that stops answering now (a paused node that took the
	// row's delete a moment before) would hold each drain's handlers in
	// their bounded writes, one shard after another, far past any grace
	// period (run 2 of a stop: over 30 s after SIGTERM). Together it is
	// the longest handler's wait, as the chart's grace assumes.
	var wg sync.WaitGroup
	for s, e := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.cb.DrainShard(ctx, s, e)
		}()
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.locker != nil {
		for s, e := range held {
			if r.held[s] == e {
				_ = r.locker.Release(ctx, s, e)
			}
		}
		_ = r.locker.Close()
		r.locker = nil
	}
	r.held = map[string]int64{}
	r.heldView.Clear()
	r.log.Info("workflow runner: left the cluster", "released_shards", len(held))
}

// abandonShards stops every held shard's entities and closes the locker in
// the background, without releasing anything (Leave when the database does
// not answer).
func (r *Runner) abandonShards(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.held {
		r.lose(s, reason)
	}
	if l := r.locker; l != nil {
		// Its ledger clean-up would wait on the database too.
		go func() { _ = l.Close() }()
		r.locker = nil
	}
	r.log.Info("workflow runner: left the cluster without releasing its shards", "reason", reason)
}

// Status is the runner's view of itself.
type Status struct {
	Address          string
	Mode             string
	LockHealthy      bool
	LockError        string
	PoolHealthy      bool
	PoolError        string
	PoolLastOK       time.Time
	PoolFailures     int64
	Held             map[string]int64
	Unacquired       map[string]time.Duration // assigned to us, not held, for how long
	LiveRunners      []string
	Suspects         []string
	LastTick         time.Time
	OwnershipChanges int64
	LockFailures     int64 // times the lock connection failed and every shard was dropped
	// Refused says why this process does not act for its address (another
	// live process holds it, or an earlier one is still being waited out);
	// "" when it does.
	Refused string
	// FenceErrors names frozen peers (stale heartbeat, locks still held)
	// whose lock session the database refused to end, with why.
	FenceErrors map[string]string
	Fences      int64 // frozen peers' sessions ended by this runner
	// StaleRunners counts runner rows whose heartbeat is past expiry and
	// which are not pruned yet; Pruned counts rows this runner removed.
	StaleRunners int
	Pruned       int64
	// LiveTypes is every entity type hosted by a live runner (see LiveTypes).
	LiveTypes map[string]bool
	// EarlierTwins are the live runners with this runner's replica id
	// (POD_NAME) that started before it, by the last listing: this one is
	// the later, and its readiness is refused while they live.
	EarlierTwins []Twin
	// PassBusy, when set, is how long the runner's current pass has been
	// waiting on the database; the rest of the Status is then the view at
	// the end of the last pass.
	PassBusy time.Duration
}

// Twin is another live runner with this runner's replica id.
type Twin struct {
	Address   string
	StartedAt time.Time
}

// statusWait is how long Status waits for a pass to finish before it
// answers from the last pass's view.
const statusWait = 200 * time.Millisecond

// Status returns a snapshot. It answers within statusWait even while a pass
// waits on a database that does not answer: then with the view at the end
// of the last pass and PassBusy set, so that health probes and inspect
// say what is wrong instead of hanging with the runner.
func (r *Runner) Status() Status {
	got := make(chan Status, 1)
	go func() {
		r.mu.Lock()
		st := r.statusLocked()
		r.mu.Unlock()
		got <- st
	}()
	t := time.NewTimer(statusWait)
	defer t.Stop()
	select {
	case st := <-got:
		return st
	case <-t.C:
	}
	st := Status{Address: r.opts.Address, Mode: string(r.opts.Mode)}
	if snap := r.snapshot.Load(); snap != nil {
		st = *snap
		st.Held, st.Unacquired, st.FenceErrors, st.LiveTypes = maps.Clone(st.Held), maps.Clone(st.Unacquired), maps.Clone(st.FenceErrors), maps.Clone(st.LiveTypes)
		st.EarlierTwins = slices.Clone(st.EarlierTwins)
	}
	if since := r.passSince.Load(); since != 0 {
		st.PassBusy = time.Since(time.Unix(0, since))
	}
	return st
}

// endPass publishes the view at the end of a pass, for Status to answer
// from while a later pass is stuck.
func (r *Runner) endPass() {
	st := r.statusLocked()
	r.snapshot.Store(&st)
	r.passSince.Store(0)
}

func (r *Runner) statusLocked() Status {
	now := time.Now()
	st := Status{
		Address: r.opts.Address, Mode: string(r.opts.Mode),
		LockHealthy: r.lockHealthy, LockError: r.lockErr,
		PoolHealthy: r.pool.healthy, PoolError: r.pool.lastErr, PoolLastOK: r.pool.lastOK, PoolFailures: r.pool.failures,
		Held: maps.Clone(r.held), Unacquired: map[string]time.Duration{},
		LastTick: r.lastTick, OwnershipChanges: r.moves, LockFailures: r.lockFailures,
		Refused: r.refused, FenceErrors: maps.Clone(r.fenceErrs), Fences: r.fences, Pruned: r.pruned,
	}
	for a, x := range r.rows {
		if a != r.opts.Address && x.HeartbeatAge >= r.expiry() {
			st.StaleRunners++
		}
	}
	for s, at := range r.unacquiredSince {
		st.Unacquired[s] = now.Sub(at)
	}
	for _, x := range r.live {
		st.LiveRunners = append(st.LiveRunners, x.Address)
	}
	for s := range r.suspects {
		st.Suspects = append(st.Suspects, s)
	}
	slices.Sort(st.Suspects)
	st.LiveTypes = r.liveTypesLocked()
	st.EarlierTwins = r.earlierTwinsLocked()
	return st
}

// earlierTwinsLocked lists the live rows with this runner's replica id that
// started before its own row (the address breaks a tie, so of two twins
// exactly one is the later).
func (r *Runner) earlierTwinsLocked() []Twin {
	self, ok := r.rows[r.opts.Address]
	if !ok || r.opts.ReplicaID == "" {
		return nil
	}
	var out []Twin
	for a, x := range r.rows {
		if a == r.opts.Address || x.ReplicaID != r.opts.ReplicaID || x.HeartbeatAge >= r.expiry() {
			continue
		}
		if x.StartedAt.Before(self.StartedAt) || (x.StartedAt.Equal(self.StartedAt) && a < r.opts.Address) {
			out = append(out, Twin{Address: a, StartedAt: x.StartedAt})
		}
	}
	slices.SortFunc(out, func(a, b Twin) int { return strings.Compare(a.Address, b.Address) })
	return out
}

// LiveTypes returns every entity type hosted by a live runner, by the last
// listing (ours included).
func (r *Runner) LiveTypes() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.liveTypesLocked()
}

func (r *Runner) liveTypesLocked() map[string]bool {
	out := map[string]bool{}
	for _, x := range r.live {
		if r.isSuspect(x.Address) {
			continue
		}
		for _, t := range x.EntityTypes {
			out[t] = true
		}
	}
	for _, t := range r.opts.EntityTypes() {
		out[t] = true
	}
	return out
}

// Abandon stops the runner the way a killed process would: the reserved
// connection closes (session locks vanish) and nothing is cleaned up.
// Failover tests use it to crash a runner inside one process.
func (r *Runner) Abandon() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leaving = true
	if r.locker != nil {
		_ = r.locker.Close()
		r.locker = nil
	}
}

// SetInspectAddr publishes where this instance's inspect endpoint listens,
// so `voltro cluster status` can find it through the runners table.
func (r *Runner) SetInspectAddr(addr string) {
	r.mu.Lock()
	r.opts.InspectAddr = addr
	r.typesDirty = true
	r.mu.Unlock()
}
