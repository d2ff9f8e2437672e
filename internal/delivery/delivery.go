package delivery

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/clock"
	"github.com/voltro/voltro/internal/service"
	"github.com/voltro/voltro/internal/store"
)

// Handler runs one message and returns the reply payload. Return an error
// satisfying IsPermanent to skip retries.
type Handler func(ctx context.Context, m store.Message) ([]byte, error)

// TypeOptions tune one entity type.
type TypeOptions struct {
	MaxAttempts int                             // deliveries before dead-lettering; default 5
	Backoff     func(attempt int) time.Duration // delay before retry n (n>=1)
	StoreOnly   bool                            // refuse volatile messages: every message is a stored row
}

// Options configure a Deliverer.
type Options struct {
	Owner        string        // runner address
	ClaimTTL     time.Duration // default 60 s; claims are extended on every heartbeat
	PollInterval time.Duration // fallback read cadence; default 2 s
	BatchSize    int           // default 64
	MaxInFlight  int           // claimed and unfinished messages; default 1024
	Logger       *slog.Logger
	// OnReply is called after a final reply was stored for m (success, error
	// or dead letter) so the engine can push it to the waiting requester.
	OnReply func(m store.Message, r store.Reply)
	// Clock times retry backoff and is held while a message is in flight
	// (nil: the wall clock). The read loop's own cadence stays on the
	// wall clock: when messages fall due is the store's to say.
	Clock clock.Clock
}

type entityType struct {
	handler Handler
	opts    TypeOptions
}

type shardState struct {
	epoch    int64
	ctx      context.Context
	cancel   context.CancelFunc
	draining bool
	running  sync.WaitGroup
	claimed  map[int64]bool // claims we hold on this shard
}

// Deliverer is one runner's read loop and mailboxes.
type Deliverer struct {
	loop *service.Loop // Run, from Start to Stop
	d    store.Driver
	opts Options
	log  *slog.Logger
	clk  clock.Clock

	mu        sync.Mutex
	types     map[string]*entityType
	shards    map[string]*shardState
	mailboxes map[mailboxKey]*mailbox
	inFlight  int
	wake      chan struct{}
	lastLoop  time.Time
	lastErr   string
	nextDue   time.Time // when the next delayed message falls due, as last read; zero: none known
	stats     Stats
	// giveBack holds claims whose outcome could not be written and whose
	// release failed too; Beat releases them before it extends claims.
	giveBack map[store.Fence][]int64
	// releases are the claim releases of lost shards still running.
	releases sync.WaitGroup
}

// Stats are counters since start.
type Stats struct {
	Claimed, Delivered, Retried, Dead, Released, Fenced int64
}

// New builds a Deliverer; Run starts its loop.
func New(d store.Driver, opts Options) *Deliverer {
	if opts.ClaimTTL <= 0 {
		opts.ClaimTTL = time.Minute
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 2 * time.Second
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 64
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 1024
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.OnReply == nil {
		opts.OnReply = func(store.Message, store.Reply) {}
	}
	x := &Deliverer{
		d: d, opts: opts, log: opts.Logger, clk: clock.Or(opts.Clock),
		types:     map[string]*entityType{},
		shards:    map[string]*shardState{},
		mailboxes: map[mailboxKey]*mailbox{},
		wake:      make(chan struct{}, 1),
	}
	x.loop = service.NewLoop(func(ctx context.Context) error { x.Run(ctx); return nil })
	return x
}

// Register adds an entity type and reads its backlog at once.
func (x *Deliverer) Register(name string, h Handler, opts TypeOptions) {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 5
	}
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	x.mu.Lock()
	x.types[name] = &entityType{handler: h, opts: opts}
	x.mu.Unlock()
	x.Wake()
}

// DefaultBackoff doubles from 100 ms up to 10 s.
func DefaultBackoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt-1, 7)
	return min(d, 10*time.Second)
}

// Types lists the registered entity types.
func (x *Deliverer) Types() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]string, 0, len(x.types))
	for t := range x.types {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Wake asks the loop to read now.
func (x *Deliverer) Wake() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// Start runs the read loop (Run) until Stop. The shards' handlers are
// StopShards'.
func (x *Deliverer) Start(ctx context.Context) error { return x.loop.Start(ctx) }

// Stop ends the read loop and waits for it.
func (x *Deliverer) Stop(ctx context.Context) error { return x.loop.Stop(ctx) }

// Run is the read loop; it returns when ctx ends.
func (x *Deliverer) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		woken := true
		select {
		case <-ctx.Done():
			return
		case <-x.wake:
		case <-timer.C:
			woken = false
		}
		next := x.readOnce(ctx, woken)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// readOnce claims until the backlog is empty or the in-flight limit is
// reached, then says how long to sleep.
//
// When the next delayed message falls due is read before the claims, not
// after: the store names the earliest message due after the moment it
// reads, so a message falling due between the claims and a read made after
// them was in neither, and waited for the next poll (a wave of sleeps that
// a new owner's resumed runs had set together lost its last few that way,
// a poll interval late). Read first, a message due by the claims is theirs
// and one due after them is at or after the time read; when that time has
// passed by the end of the claims, the next read comes at once.
func (x *Deliverer) readOnce(ctx context.Context, woken bool) time.Duration {
	// A quiet poll (no wake-up, the next due time not reached) keeps the
	// time it had: every enqueue wakes the owner, so a new delayed message
	// comes with a wake-up that reads the next due time again.
	refresh := woken || (!x.nextDue.IsZero() && !time.Now().Before(x.nextDue))
	if refresh {
		x.readNextDue(ctx)
	}
	claimed := 0
	for ctx.Err() == nil {
		req, room := x.claimRequest()
		x.touch("")
		if req == nil {
			break
		}
		msgs, err := x.d.Claim(ctx, *req)
		if err != nil {
			if ctx.Err() == nil {
				x.log.Warn("delivery: claim failed", "err", err)
				x.touch(err.Error())
			}
			return min(x.opts.PollInterval, time.Second)
		}
		x.dispatch(ctx, msgs)
		claimed += len(msgs)
		if len(msgs) < req.Limit || len(msgs) >= room {
			break
		}
	}
	if claimed > 0 && !refresh {
		// A poll found work that no wake-up announced: the next due time
		// may be older than it, so read it (and claim) again at once.
		x.nextDue = time.Now()
	}
	wait := x.opts.PollInterval
	if !x.nextDue.IsZero() {
		wait = min(wait, max(time.Until(x.nextDue), time.Millisecond))
	}
	return wait
}

// readNextDue reads when the next delayed message of our shards falls due
// into nextDue (zero for none). A store that fails is asked again within
// a second.
func (x *Deliverer) readNextDue(ctx context.Context) {
	x.nextDue = time.Time{}
	types := x.Types()
	if len(types) == 0 || ctx.Err() != nil {
		return
	}
	w, ok, err := x.d.NextDelivery(ctx, x.opts.Owner, types)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			x.log.Warn("delivery: reading the next due time failed", "err", err)
		}
		x.nextDue = time.Now().Add(min(x.opts.PollInterval, time.Second))
	case ok:
		x.nextDue = time.Now().Add(max(w, 0))
	}
}

func (x *Deliverer) touch(errText string) {
	x.mu.Lock()
	x.lastLoop = time.Now()
	x.lastErr = errText
	x.mu.Unlock()
}

func (x *Deliverer) claimRequest() (*store.ClaimRequest, int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	room := x.opts.MaxInFlight - x.inFlight
	if room <= 0 || len(x.types) == 0 {
		return nil, 0
	}
	req := &store.ClaimRequest{Owner: x.opts.Owner, Limit: min(room, x.opts.BatchSize), ClaimTTL: x.opts.ClaimTTL}
	for t := range x.types {
		req.Types = append(req.Types, t)
	}
	for s, st := range x.shards {
		if !st.draining {
			req.Shards = append(req.Shards, s)
		}
	}
	if len(req.Shards) == 0 {
		return nil, 0
	}
	slices.Sort(req.Types)
	slices.Sort(req.Shards)
	return req, room
}

// dispatch hands claimed messages to mailboxes; any that cannot be delivered
// here are released synchronously.
func (x *Deliverer) dispatch(ctx context.Context, msgs []store.Message) {
	var release map[store.Fence][]int64
	x.mu.Lock()
	for _, m := range msgs {
		x.stats.Claimed++
		st := x.shards[m.Shard]
		t := x.types[m.EntityType]
		if st == nil || st.draining || st.epoch != m.ClaimEpoch || t == nil {
			if release == nil {
				release = map[store.Fence][]int64{}
			}
			f := store.Fence{Owner: m.ClaimedBy, Epoch: m.ClaimEpoch}
			release[f] = append(release[f], m.ID)
			continue
		}
		x.enqueueLocked(st, m, t)
	}
	x.mu.Unlock()
	for f, ids := range release {
		x.release(ctx, f, ids)
	}
}

func (x *Deliverer) release(ctx context.Context, f store.Fence, ids []int64) bool {
	if len(ids) == 0 {
		return true
	}
	// Releasing must happen even while shutting down.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := x.d.Release(rctx, f, ids); err != nil {
		x.log.Warn("delivery: releasing claims failed; they expire on their own", "err", err, "count", len(ids))
		return false
	}
	x.mu.Lock()
	x.stats.Released += int64(len(ids))
	x.mu.Unlock()
	return true
}

// abandon gives back the claim of a message whose outcome could not be
// written: it is released now, so it is redelivered at once. Left claimed,
// it would be extended with every other claim of this runner on each
// heartbeat while the runner is busy, and never expire. A release that
// fails too is retried on the next heartbeats (see Beat).
func (x *Deliverer) abandon(ctx context.Context, f store.Fence, ids ...int64) {
	if x.release(ctx, f, ids) {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.giveBack == nil {
		x.giveBack = map[store.Fence][]int64{}
	}
	x.giveBack[f] = append(x.giveBack[f], ids...)
}

// DispatchClaimed delivers a message the sender inserted already claimed for
// us (the owner fast path). It reports false if the shard moved meanwhile;
// the message is then released.
func (x *Deliverer) DispatchClaimed(m store.Message) bool {
	x.mu.Lock()
	st := x.shards[m.Shard]
	t := x.types[m.EntityType]
	if st == nil || st.draining || st.epoch != m.ClaimEpoch || t == nil {
		x.mu.Unlock()
		x.release(context.Background(), store.Fence{Owner: m.ClaimedBy, Epoch: m.ClaimEpoch}, []int64{m.ID})
		x.Wake()
		return false
	}
	x.stats.Claimed++
	x.enqueueLocked(st, m, t)
	x.mu.Unlock()
	return true
}

// Epoch is the epoch at which the deliverer serves shard, or 0.
func (x *Deliverer) Epoch(shard string) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	if st := x.shards[shard]; st != nil && !st.draining {
		return st.epoch
	}
	return 0
}

// HasType reports whether the type is registered here.
func (x *Deliverer) HasType(t string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.types[t] != nil
}

// Snapshot returns counters and loop liveness.
func (x *Deliverer) Snapshot() (Stats, time.Time, string, int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stats, x.lastLoop, x.lastErr, x.inFlight
}
