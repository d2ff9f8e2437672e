package runner

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/service"
	"github.com/voltro/voltro/internal/sharding"
	"github.com/voltro/voltro/internal/store"
)

// Callbacks is what the runner tells the delivery side.
type Callbacks interface {
	// ShardAcquired: the shard is ours at epoch; read its backlog.
	ShardAcquired(shard string, epoch int64)
	// ShardLost: the lock is gone. Stop the shard's entities at once and
	// release their claims, without waiting on the database (it may be
	// why the lock is gone): the runner calls it with its state locked.
	ShardLost(shard string, epoch int64, reason string)
	// DrainShard: stop taking work for the shard, wait for running handlers
	// (bounded by ctx) and release every claim, before a graceful release.
	DrainShard(ctx context.Context, shard string, epoch int64)
	// Beat runs on every heartbeat while the runner is healthy (extend
	// claims, refresh drain statistics).
	Beat(ctx context.Context)
}

// Options configure a runner.
type Options struct {
	Address     string
	ReplicaID   string
	Groups      []string
	ShardCount  int
	Mode        store.LockMode // resolved
	Heartbeat   time.Duration  // heartbeat, lock refresh and pool probe cadence
	Tick        time.Duration  // survey cadence; default min(1s, Heartbeat)
	LeaseTTL    time.Duration  // row-lease length; default 3 × Heartbeat
	InspectAddr string
	Version     string
	Meta        string
	EntityTypes func() []string
	Logger      *slog.Logger
	// Private: single-process runner storage on a shared store (see
	// private.go). Groups must then be private groups; Mode is row.
	Private bool
}

// Runner is one member of the cluster.
type Runner struct {
	loop *service.Loop // Run, from Start to Stop
	d    store.Driver
	opts Options
	cb   Callbacks
	log  *slog.Logger
	all  []string

	mu              sync.Mutex
	locker          store.Locker
	lockHealthy     bool
	lockErr         string
	held            map[string]int64
	validUntil      map[string]time.Time
	releasing       map[string]bool
	assigned        map[string]string
	live            []store.Runner
	rows            map[string]store.Runner // every runner row, by address, as last listed
	suspects        map[string]suspect
	fenced          map[string]time.Time // frozen peers: last attempt to end their session
	fenceErrs       map[string]string    // frozen peers whose session could not be ended, and why
	fences          int64
	lastPrune       time.Time
	pruned          int64
	refused         string // why this process does not act for its address, "" when it does
	addressOK       bool   // row mode: no earlier process at our address is alive
	watch           addressWatch
	changedAt       time.Time // last change of the live set or the suspects
	ownStarted      time.Time // our row's started_at as first listed after our registration
	superseded      bool      // a newer process registered at our address
	moveLog         moveLog   // this pass's ownership changes, logged at its end
	unacquiredSince map[string]time.Time
	unclaimed       map[string]unclaimedShard // free shards proposed to a peer (see watchUnclaimed)
	lastWatch       time.Time                 // last pass of watchUnclaimed
	lastBeat        time.Time
	lastList        time.Time
	lastTick        time.Time
	registered      bool
	typesDirty      bool
	pool            poolHealth
	moves           int64
	lockFailures    int64 // reserved-connection failures (refresh, heartbeat, acquire)
	leaving         bool
	handovers       sync.WaitGroup

	// What Status answers while a pass holds mu in a database call that
	// does not return (a paused or unreachable node): the view at the end
	// of the last pass, and when the current pass began (0 between passes).
	snapshot atomic.Pointer[Status]
	listed   atomic.Pointer[map[string]bool] // the addresses of the last listing
	// What Owner answers from, kept beside held and assigned under mu.
	heldView     sync.Map                          // shard -> struct{}: held's keys
	assignedView atomic.Pointer[map[string]string] // assigned, which is replaced, never changed

	passSince atomic.Int64
}

// New builds a runner; Run starts it.
func New(d store.Driver, cb Callbacks, opts Options) *Runner {
	if opts.Tick <= 0 {
		opts.Tick = min(time.Second, opts.Heartbeat)
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 3 * opts.Heartbeat
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.EntityTypes == nil {
		opts.EntityTypes = func() []string { return nil }
	}
	r := &Runner{
		d: d, opts: opts, cb: cb, log: opts.Logger,
		all:             sharding.All(opts.Groups, opts.ShardCount),
		held:            map[string]int64{},
		validUntil:      map[string]time.Time{},
		releasing:       map[string]bool{},
		rows:            map[string]store.Runner{},
		suspects:        map[string]suspect{},
		fenced:          map[string]time.Time{},
		fenceErrs:       map[string]string{},
		unacquiredSince: map[string]time.Time{},
		unclaimed:       map[string]unclaimedShard{},
		pool:            poolHealth{healthy: true, threshold: 3},
	}
	r.loop = service.NewLoop(r.Run)
	return r
}

// Address is the advertised runner address.
func (r *Runner) Address() string { return r.opts.Address }

// TypesChanged asks the runner to publish its entity types again.
func (r *Runner) TypesChanged() {
	r.mu.Lock()
	r.typesDirty = true
	r.mu.Unlock()
}

// Epoch returns the epoch at which this runner holds shard, or 0.
func (r *Runner) Epoch(shard string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.releasing[shard] {
		return 0
	}
	return r.held[shard]
}

// Held returns a copy of the held shards and epochs (not those being handed over).
func (r *Runner) Held() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.held))
	for s, e := range r.held {
		if !r.releasing[s] {
			out[s] = e
		}
	}
	return out
}

// Listed reports whether addr has a runner row in this runner's last
// listing of the cluster. It does not wait on a pass in progress.
func (r *Runner) Listed(addr string) bool {
	m := r.listed.Load()
	return m != nil && (*m)[addr]
}

// Owner is where to send a wake-up for shard: this runner if it holds it,
// else the runner the last assignment proposed. "" when unknown.
//
// It does not wait on a pass in progress: a pass holds the runner's lock
// across its database calls, which a slow or hanging node can keep waiting
// for up to a lease, and every start, send and wake-up here asks Owner.
func (r *Runner) Owner(shard string) string {
	if _, ok := r.heldView.Load(shard); ok {
		return r.opts.Address
	}
	if a := r.assignedView.Load(); a != nil {
		return (*a)[shard]
	}
	return ""
}

// Start runs the runner's loop (Run) until Stop. Leaving the cluster is
// Leave's, once every loop of the instance has stopped.
func (r *Runner) Start(ctx context.Context) error { return r.loop.Start(ctx) }

// Stop ends the loop Start began and waits for it.
func (r *Runner) Stop(ctx context.Context) error { return r.loop.Stop(ctx) }

// Run registers the runner and keeps it in the cluster until ctx ends.
func (r *Runner) Run(ctx context.Context) error {
	r.step(ctx)
	t := time.NewTimer(r.nextStep())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.step(ctx)
			t.Reset(r.nextStep())
		}
	}
}

// nextStep is the wait before the next pass: a quarter tick while shards
// proposed to this runner are held by a peer that is handing them over, or
// for a heartbeat expiry after the membership changed (a peer left, died or
// was suspected: its restart is likely and is noticed within a quarter
// tick), a tick otherwise. A steady cluster pays the tick cadence only.
func (r *Runner) nextStep() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unacquiredSince) > 0 || len(r.releasing) > 0 || time.Since(r.changedAt) < r.expiry() {
		return max(r.opts.Tick/4, 10*time.Millisecond)
	}
	return r.opts.Tick
}

func (r *Runner) registerRow() store.Runner {
	types := slices.Clone(r.opts.EntityTypes())
	slices.Sort(types)
	return store.Runner{
		Address: r.opts.Address, ReplicaID: r.opts.ReplicaID, Groups: r.opts.Groups,
		EntityTypes: types, InspectAddr: r.opts.InspectAddr, Version: r.opts.Version,
		Healthy: r.pool.healthy && r.lockHealthy, Meta: r.opts.Meta,
	}
}

// step is one iteration: locker health, heartbeat, survey, acquire, hand over.
func (r *Runner) step(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	r.passSince.Store(now.UnixNano())
	defer r.endPass()
	defer r.flushMoves()
	if r.leaving || ctx.Err() != nil {
		return
	}
	r.lastTick = now
	// A lease that ran out while the last pass waited is dropped before
	// this one calls the database again.
	r.expireLeases(now)
	// A generous limit for the calls themselves: a query cancelled halfway
	// can cost the reserved connection. The pass stops starting new lock
	// calls once its time budget is spent instead (see balance). It never
	// outlives a held lease, though: a call that hangs (a paused node) must
	// not keep this runner acting for shards that others may take by now.
	opctx, cancel := context.WithDeadline(ctx, r.callDeadline(now))
	defer cancel()

	beat := now.Sub(r.lastBeat) >= r.opts.Heartbeat
	if beat {
		r.lastBeat = now
		r.probePool(opctx)
	}
	if !r.pool.healthy {
		r.loseAll("connection pool unhealthy")
		return
	}
	if r.opts.Private {
		r.stepPrivate(ctx, now, beat)
		return
	}
	if r.locker == nil || !r.lockHealthy {
		if !r.openLocker(opctx) {
			return
		}
		beat = true
	}
	// Calls through the application pool get the heartbeat as their limit,
	// and none is made while the last probe failed: a starved pool must not
	// stall the pass that probes it and refreshes the locks.
	poolOK := r.pool.lastErr == ""
	poolctx, cancelPool := context.WithTimeout(ctx, max(r.opts.Heartbeat, time.Second))
	defer cancelPool()
	// One process per address (identity.go): a process that may not act
	// for its address registers nothing and takes no shards.
	if (poolOK && !r.ownAddress(poolctx, now)) || (!poolOK && r.refused != "") || r.locker == nil {
		return
	}
	if (!r.registered || r.typesDirty) && poolOK {
		if err := r.register(poolctx); err != nil {
			r.log.Warn("workflow runner: registration failed", "err", err)
			return
		}
		r.registered, r.typesDirty, r.lastList = true, false, time.Time{}
	}
	if beat {
		if !r.heartbeat(opctx) {
			return
		}
		if poolOK {
			r.cb.Beat(poolctx)
		}
	}
	r.expireLeases(now)
	r.balance(opctx, poolctx, poolOK, now)
}

func (r *Runner) openLocker(ctx context.Context) bool {
	if r.locker != nil {
		_ = r.locker.Close()
		r.locker = nil
	}
	l, err := r.d.NewLocker(ctx, r.opts.Mode, r.opts.Address)
	if err != nil {
		if errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) {
			return false // the runner is stopping
		}
		if r.lockErr == "" {
			r.log.Error("workflow runner: lock storage unavailable; holding no shards until it answers", "err", err)
		}
		r.lockHealthy, r.lockErr = false, err.Error()
		return false
	}
	if r.lockErr != "" {
		r.log.Info("workflow runner: lock storage answers again; re-acquiring shards")
	}
	r.locker, r.lockHealthy, r.lockErr = l, true, ""
	return true
}

// heartbeat stamps our row and refreshes every held lock.
func (r *Runner) heartbeat(ctx context.Context) bool {
	if err := r.locker.Heartbeat(ctx, r.opts.Address); err != nil {
		if isNotFound(err) {
			r.registered = false
			if err := r.register(ctx); err == nil {
				r.registered = true
			}
		} else {
			r.lockFailed(ctx, err)
			return false
		}
	}
	if len(r.held) == 0 {
		return true
	}
	if r.opts.Mode == store.LockAdvisory {
		// Session locks need no extending, and the survey that runs on
		// every tick already compares the ledger with what we hold.
		return true
	}
	started := time.Now()
	lost, err := r.locker.Refresh(ctx, r.held, r.opts.LeaseTTL)
	if err != nil {
		r.lockFailed(ctx, err)
		return false
	}
	for _, s := range lost {
		r.lose(s, "lock refresh: no longer held at our epoch")
	}
	if r.opts.Mode == store.LockRow {
		// the lease runs from before the refresh was sent, minus a margin
		valid := started.Add(r.opts.LeaseTTL - r.opts.LeaseTTL/10)
		for s := range r.held {
			r.validUntil[s] = valid
		}
	}
	return true
}

// lockFailed: the reserved connection is unusable. Every shard is lost at
// once; a new locker is opened only once the store answers again. A call
// cut short because the runner itself is stopping (ctx, the call's context,
// cancelled by the shutdown) is no storage failure: Leave releases the
// shards, and the record is at Debug.
func (r *Runner) lockFailed(ctx context.Context, err error) {
	if errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) {
		r.log.Debug("workflow runner: lock call cut short by shutdown", "err", err)
		return
	}
	r.log.Error("workflow runner: shard lock storage failed; stopping every entity and releasing shards", "err", err, "shards", len(r.held))
	r.lockHealthy, r.lockErr = false, err.Error()
	r.lockFailures++
	r.loseAll("lock storage failed: " + err.Error())
	if r.locker != nil {
		_ = r.locker.Close()
		r.locker = nil
	}
}

// callDeadline bounds the lock calls of a pass begun at now: the generous
// call limit, or the first moment a held row lease stops being valid,
// whichever comes first.
func (r *Runner) callDeadline(now time.Time) time.Time {
	deadline := now.Add(max(r.opts.Heartbeat, 10*time.Second))
	if r.opts.Mode != store.LockRow {
		return deadline
	}
	for s, until := range r.validUntil {
		if _, ok := r.held[s]; ok && until.Before(deadline) {
			deadline = until
		}
	}
	return deadline
}

func (r *Runner) expireLeases(now time.Time) {
	if r.opts.Mode != store.LockRow {
		return
	}
	for s, until := range r.validUntil {
		if _, ok := r.held[s]; ok && now.After(until) {
			r.lose(s, "row lease not refreshed before expiry")
		}
	}
}

func (r *Runner) lose(shard, reason string) {
	epoch, ok := r.held[shard]
	if !ok {
		return
	}
	delete(r.held, shard)
	r.heldView.Delete(shard)
	delete(r.validUntil, shard)
	r.moves++
	r.log.Debug("workflow runner: shard lost", "shard", shard, "epoch", epoch, "reason", reason)
	r.moveLog.add(&r.moveLog.lost, reason)
	r.cb.ShardLost(shard, epoch, reason)
}

func (r *Runner) loseAll(reason string) {
	for s := range r.held {
		r.lose(s, reason)
	}
	if r.locker != nil {
		// Closing the locker releases its locks, so survivors need not wait
		// for a lease to expire.
		_ = r.locker.Close()
		r.locker, r.lockHealthy = nil, false
	}
}

func isNotFound(err error) bool { return errors.Is(err, errs.ErrNotFound) }
