package engine

// Entity registration, sends and request/reply, and how replies and wake-ups
// reach whoever waits for them (in process, runner RPC, or the store's feed).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/voltro/voltro/internal/delivery"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/runner"
	"github.com/voltro/voltro/internal/sharding"
	"github.com/voltro/voltro/internal/store"
)

// EntityOptions tune a registered entity type.
type EntityOptions struct {
	Group       string // shard group; default the first configured group
	MaxAttempts int
	Backoff     func(attempt int) time.Duration
	// StoreOnly: every message of the type must come from the store; a
	// volatile message (local or from a peer) is refused. Workflows are
	// StoreOnly: their timers, signals and child results are truth only
	// when they are rows.
	StoreOnly bool
}

// Register adds an entity type. It may be called before or after Start;
// its backlog is read at once.
func (e *Engine) Register(entityType string, h delivery.Handler, o EntityOptions) error {
	if entityType == "" {
		return errs.New(errs.CodeInvalidArgument, "entity type name is empty")
	}
	group := o.Group
	if group == "" {
		group = e.cfg.Groups[0]
	}
	known := false
	for _, g := range e.cfg.Groups {
		known = known || g == group
	}
	if !known {
		return errs.New(errs.CodeInvalidArgument, "entity type %q: shard group %q is not one of %v", entityType, group, e.cfg.Groups)
	}
	e.mu.Lock()
	e.groups[entityType] = group
	e.mu.Unlock()
	e.deliv.Register(entityType, e.tel.WrapHandler(entityType, h), delivery.TypeOptions{MaxAttempts: o.MaxAttempts, Backoff: o.Backoff, StoreOnly: o.StoreOnly})
	e.runner.TypesChanged()
	return nil
}

// Message is what callers send.
type Message struct {
	EntityType string
	EntityID   string
	Tag        string
	Payload    []byte
	Headers    map[string]string
	DedupeKey  string
	Delay      time.Duration
	DeliverAt  time.Time
	Group      string // shard group if the type is not registered here
}

// ShardOf returns the shard of an entity.
func (e *Engine) ShardOf(entityType, entityID, group string) string {
	if group == "" {
		e.mu.Lock()
		group = e.groups[entityType]
		e.mu.Unlock()
	}
	if group == "" {
		group = e.cfg.Groups[0]
	}
	if e.private {
		group = runner.PrivateGroup(e.cfg.ReplicaID, group)
	}
	return sharding.For(group, entityID, e.cfg.ShardCount)
}

// Sent is what Send did.
type Sent struct {
	ID        int64
	Duplicate bool
	Reply     *store.Reply
}

// Send persists a message and wakes its owner. It does not wait.
func (e *Engine) Send(ctx context.Context, in Message) (Sent, error) {
	s, _, err := e.send(ctx, in, false)
	return s, err
}

func (e *Engine) send(ctx context.Context, in Message, wait bool) (Sent, chan store.Reply, error) {
	if in.EntityType == "" || in.EntityID == "" {
		return Sent{}, nil, errs.New(errs.CodeInvalidArgument, "a message needs an entity type and an entity id")
	}
	// Held from the insert until the message is dispatched or its owner
	// woken: a virtual clock sees it as work from the first moment on.
	defer e.clk.Hold()()
	m := e.storeMessage(ctx, in)
	shard := m.Shard
	if wait && e.cfg.Clustered() {
		m.ReplyTo = e.address
	}
	// The claim takes a due message at insert; on one not due yet it tells
	// the store the sender owns the shard (no NOTIFY needed: Dispatched
	// wakes our own loop, which reads the next due time).
	claim := e.ClaimFor(shard, in.EntityType)
	res, err := e.d.Enqueue(ctx, m, claim)
	if err != nil {
		return Sent{}, nil, err
	}
	out := Sent{ID: res.ID, Duplicate: res.Duplicate, Reply: res.Reply}
	var ch chan store.Reply
	if wait && res.Reply == nil {
		ch = e.addWaiter(res.ID)
	}
	e.Dispatched(*m, res)
	return out, ch, nil
}

// storeMessage is the stored form of in, on its entity's shard, with the
// trace context of ctx in its headers.
func (e *Engine) storeMessage(ctx context.Context, in Message) *store.Message {
	return &store.Message{
		Shard: e.ShardOf(in.EntityType, in.EntityID, in.Group), EntityType: in.EntityType, EntityID: in.EntityID, Tag: in.Tag,
		Payload: in.Payload, Headers: e.tel.InjectHeaders(ctx, in.Headers), DedupeKey: in.DedupeKey,
		Delay: in.Delay, DeliverAt: in.DeliverAt,
	}
}

// ClaimFor returns the claim-at-insert for a message this runner will
// deliver itself (it holds the shard and hosts the type), or nil.
func (e *Engine) ClaimFor(shard, entityType string) *store.EnqueueClaim {
	epoch := e.deliv.Epoch(shard)
	if epoch == 0 || !e.deliv.HasType(entityType) || e.deliv.Full() {
		// Full: MaxInFlight messages are in flight here; the message waits
		// in the mailbox for the read loop, which honours that cap.
		return nil
	}
	return &store.EnqueueClaim{Owner: e.address, Epoch: epoch, ClaimTTL: max(6*e.cfg.Heartbeat, 30*time.Second)}
}

// Dispatched follows up an enqueue: a message inserted already claimed for
// us goes straight to its mailbox (true); otherwise the owner is woken.
func (e *Engine) Dispatched(m store.Message, res store.EnqueueResult) bool {
	switch {
	case res.Duplicate:
		// the first send woke the owner already
	case res.ClaimedEpoch > 0:
		m.ID = res.ID
		m.State, m.ClaimedBy, m.ClaimEpoch, m.Attempts = store.StateClaimed, e.address, res.ClaimedEpoch, 1
		return e.deliv.DispatchClaimed(m)
	default:
		e.WakeShard(m.Shard)
	}
	return false
}

// Request sends and waits for the final reply (or ctx's deadline). A
// duplicate dedupe key returns the stored reply of the first send.
func (e *Engine) Request(ctx context.Context, in Message) (store.Reply, error) {
	s, ch, err := e.send(ctx, in, true)
	if err != nil {
		return store.Reply{}, err
	}
	if s.Reply != nil {
		return *s.Reply, nil
	}
	defer e.dropWaiter(s.ID, ch)
	// The reply may have landed between enqueue and registering the waiter.
	if r, err := e.d.GetReply(ctx, s.ID); err == nil && r != nil {
		return *r, nil
	}
	poll := time.NewTicker(max(e.pollInterval(), 500*time.Millisecond))
	defer poll.Stop()
	for {
		select {
		case r, ok := <-ch:
			if !ok {
				return store.Reply{}, errClosed
			}
			if r.RequestID == 0 { // a push without content: read it
				if got, err := e.d.GetReply(ctx, s.ID); err == nil && got != nil {
					return *got, nil
				}
				continue
			}
			return r, nil
		case <-poll.C:
			if r, err := e.d.GetReply(ctx, s.ID); err == nil && r != nil {
				return *r, nil
			}
		case <-ctx.Done():
			return store.Reply{}, errs.Wrap(errs.CodeDeadline, ctx.Err(), "waiting for the reply to message "+strconv.FormatInt(s.ID, 10))
		}
	}
}

// Awaited lists the messages whose reply a Request in this process waits
// for (a virtual clock may skip ahead for them while nothing else runs).
func (e *Engine) Awaited() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]int64, 0, len(e.waiters))
	for id := range e.waiters {
		ids = append(ids, id)
	}
	return ids
}

func (e *Engine) addWaiter(id int64) chan store.Reply {
	ch := make(chan store.Reply, 1)
	e.mu.Lock()
	e.waiters[id] = append(e.waiters[id], ch)
	e.mu.Unlock()
	return ch
}

func (e *Engine) dropWaiter(id int64, ch chan store.Reply) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ws := e.waiters[id]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(e.waiters, id)
	} else {
		e.waiters[id] = ws
	}
}

// notify hands r to local waiters of id; false if there were none.
func (e *Engine) notify(id int64, r store.Reply) bool {
	e.mu.Lock()
	ws := e.waiters[id]
	e.mu.Unlock()
	for _, w := range ws {
		select {
		case w <- r:
		default:
		}
	}
	return len(ws) > 0
}

// onReply: a reply was stored by our delivery loop.
func (e *Engine) onReply(m store.Message, r store.Reply) {
	if e.notify(m.ID, r) {
		return
	}
	if m.ReplyTo == "" || m.ReplyTo == e.address || e.wakes {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := e.client.PushReply(ctx, m.ReplyTo, m.ID); err != nil {
			e.log.Debug("runner rpc: reply push failed; the requester polls", "to", m.ReplyTo, "err", err)
		}
	}()
}

// onWake handles a push from the store's feed.
func (e *Engine) onWake(w store.Wake) {
	switch w.Kind {
	case store.WakeMessage:
		if e.deliv.Epoch(w.Shard) > 0 {
			e.deliv.Wake()
		}
	case store.WakeReply:
		e.notify(w.ID, store.Reply{})
	default: // a gap: re-read everything
		e.deliv.Wake()
		e.mu.Lock()
		ids := make([]int64, 0, len(e.waiters))
		for id := range e.waiters {
			ids = append(ids, id)
		}
		e.mu.Unlock()
		for _, id := range ids {
			e.notify(id, store.Reply{})
		}
	}
}

func (e *Engine) onRPCWake(shards []string) bool {
	for _, s := range shards {
		if e.deliv.Epoch(s) > 0 {
			e.deliv.Wake()
			return true
		}
	}
	return false
}

func (e *Engine) onRPCReply(id int64) { e.notify(id, store.Reply{}) }

// onRPCVolatile runs a volatile message from a peer only for an entity
// whose shard this runner holds now, named by the shard it hashes to, and
// of a type that takes volatile messages (a workflow's timers, signals and
// child results live in the store and are never taken from a peer).
func (e *Engine) onRPCVolatile(ctx context.Context, req rpc.VolatileRequest) ([]byte, error) {
	if !e.deliv.HasType(req.EntityType) {
		return nil, errs.New(errs.CodeUnregistered, "entity type %q is not registered on this runner", req.EntityType)
	}
	if want := e.ShardOf(req.EntityType, req.EntityID, ""); want != req.Shard {
		e.log.Warn("runner rpc: refused a volatile message naming the wrong shard", "entity_type", req.EntityType, "entity_id", req.EntityID, "shard", req.Shard, "hashes_to", want)
		return nil, errs.Wrap(errs.CodeNotOwner, rpc.ErrNotServed, fmt.Sprintf("entity %s/%s is on shard %s, not %s", req.EntityType, req.EntityID, want, req.Shard))
	}
	if e.deliv.Epoch(req.Shard) == 0 {
		return nil, errs.Wrap(errs.CodeNotOwner, rpc.ErrNotServed, "this runner does not hold shard "+req.Shard)
	}
	return e.deliv.Volatile(ctx, store.Message{Shard: req.Shard, EntityType: req.EntityType, EntityID: req.EntityID, Tag: req.Tag, Payload: req.Payload, Headers: req.Headers})
}

// Volatile delivers a message without persisting it: through our own
// mailbox if we hold the shard, else through the owner's runner RPC.
func (e *Engine) Volatile(ctx context.Context, in Message) ([]byte, error) {
	in.Headers = e.tel.InjectHeaders(ctx, in.Headers)
	shard := e.ShardOf(in.EntityType, in.EntityID, in.Group)
	m := store.Message{Shard: shard, EntityType: in.EntityType, EntityID: in.EntityID, Tag: in.Tag, Payload: in.Payload, Headers: in.Headers}
	if e.deliv.Epoch(shard) > 0 {
		return e.deliv.Volatile(ctx, m)
	}
	if !e.cfg.Clustered() {
		return nil, errs.New(errs.CodeUnavailable, "no live runner holds shard %s for the volatile message", shard)
	}
	req := rpc.VolatileRequest{Shard: shard, EntityType: in.EntityType, EntityID: in.EntityID, Tag: in.Tag, Payload: in.Payload, Headers: in.Headers}
	// The runner's view names the proposed owner; during a handover (or
	// before this runner's next pass) that may be ourselves or a peer that
	// holds nothing yet: the lock ledger then names the holder.
	view, refused := e.runner.Owner(shard), false
	if view != "" && view != e.address {
		out, err := e.client.Volatile(ctx, view, req)
		if !errors.Is(err, rpc.ErrNotServed) {
			return out, err // a handler's own error too, NotOwner or not: it ran
		}
		refused = true // refused before anything ran: safe to try the holder
	}
	holder := e.ledger.owner(ctx, e.d, shard, refused)
	if holder == "" || holder == view || holder == e.address {
		return nil, errs.New(errs.CodeUnavailable, "no live runner holds shard %s for the volatile message", shard)
	}
	return e.client.Volatile(ctx, holder, req)
}
