package delivery

// Per-entity mailboxes: one goroutine per entity with work, processing its
// messages one at a time in claim (insertion) order, and gone when idle. A
// slow or failing entity holds up only itself.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

type mailboxKey struct{ typ, id string }

type volatileCall struct {
	done chan volatileResult
}

type volatileResult struct {
	payload []byte
	err     error
}

type item struct {
	m        store.Message
	st       *shardState
	t        *entityType
	volatile *volatileCall
	unhold   func() // the clock's hold, from enqueue until done with
}

type mailbox struct {
	queue   []item
	running bool
}

// Permanent marks an error that retrying cannot fix: it becomes the final
// reply at once instead of being retried and dead-lettered.
type Permanent struct{ Err error }

func (p *Permanent) Error() string { return p.Err.Error() }
func (p *Permanent) Unwrap() error { return p.Err }

// IsPermanent reports whether err should not be retried.
func IsPermanent(err error) bool {
	var p *Permanent
	return errors.As(err, &p) || errors.Is(err, errs.ErrUnregistered) || errors.Is(err, errs.ErrInvalidArgument)
}

func (x *Deliverer) enqueueLocked(st *shardState, m store.Message, t *entityType) {
	st.claimed[m.ID] = true
	x.inFlight++
	x.pushLocked(item{m: m, st: st, t: t})
}

func (x *Deliverer) pushLocked(it item) {
	st := it.st
	st.running.Add(1)
	it.unhold = x.clk.Hold()
	k := mailboxKey{it.m.EntityType, it.m.EntityID}
	mb := x.mailboxes[k]
	if mb == nil {
		mb = &mailbox{}
		x.mailboxes[k] = mb
	}
	mb.queue = append(mb.queue, it)
	if !mb.running {
		mb.running = true
		go x.runMailbox(k, mb)
	}
}

// dropQueuedLocked removes the shard's not-yet-started items and returns
// their message ids (already forgotten as claims).
func (x *Deliverer) dropQueuedLocked(shard string, epoch int64) []int64 {
	var ids []int64
	for _, mb := range x.mailboxes {
		kept := mb.queue[:0]
		for _, it := range mb.queue {
			if it.m.Shard != shard || it.st.epoch != epoch {
				kept = append(kept, it)
				continue
			}
			if it.volatile != nil {
				it.volatile.done <- volatileResult{err: errs.New(errs.CodeNotOwner, "shard %s moved before the volatile message ran", shard)}
			} else {
				ids = append(ids, it.m.ID)
				delete(it.st.claimed, it.m.ID)
				x.inFlight--
			}
			it.st.running.Done()
			it.unhold()
		}
		clear(mb.queue[len(kept):])
		mb.queue = kept
	}
	return ids
}

func (x *Deliverer) runMailbox(k mailboxKey, mb *mailbox) {
	for {
		x.mu.Lock()
		if len(mb.queue) == 0 {
			mb.running = false
			if x.mailboxes[k] == mb {
				delete(x.mailboxes, k)
			}
			x.mu.Unlock()
			return
		}
		it := mb.queue[0]
		mb.queue[0] = item{}
		mb.queue = mb.queue[1:]
		x.mu.Unlock()
		if it.volatile != nil {
			p, err := invoke(it.st.ctx, x.log, it.t.handler, it.m)
			it.volatile.done <- volatileResult{payload: p, err: err}
			it.st.running.Done()
			it.unhold()
			continue
		}
		x.process(it)
	}
}

// finish forgets a claim after its outcome was written (or fenced).
func (x *Deliverer) finish(it item, wasFull bool) {
	x.mu.Lock()
	if it.st.claimed[it.m.ID] {
		delete(it.st.claimed, it.m.ID)
		x.inFlight--
	}
	full := x.inFlight >= x.opts.MaxInFlight-1
	x.mu.Unlock()
	it.st.running.Done()
	it.unhold()
	if wasFull || full {
		x.Wake()
	}
}

// Full reports whether MaxInFlight messages are in flight: a message
// inserted now should wait in the mailbox rather than be claimed for here.
func (x *Deliverer) Full() bool { return x.isFull() }

func (x *Deliverer) isFull() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.inFlight >= x.opts.MaxInFlight
}

// process delivers one claimed message with retries, then writes its outcome.
func (x *Deliverer) process(it item) {
	ctx := it.st.ctx
	m := it.m
	fence := store.Fence{Owner: x.opts.Owner, Epoch: m.ClaimEpoch}
	attempt := max(m.Attempts, 1)
	full := x.isFull()
	defer func() { x.finish(it, full) }()
	for {
		if ctx.Err() != nil {
			return // shard lost: its claims were released already
		}
		if attempt > it.t.opts.MaxAttempts {
			// delivered too often already (e.g. the process died in the handler)
			x.deadLetter(ctx, it, fence, errs.New(errs.CodeDeadLettered, "message %d exceeded %d delivery attempts; last error: %s", m.ID, it.t.opts.MaxAttempts, m.LastError))
			return
		}
		actx, acked := withAck(ctx)
		payload, err := invoke(actx, x.log, it.t.handler, m)
		if acked.done {
			// the handler's own transaction completed the message
			if err != nil {
				x.log.Warn("delivery: handler failed after completing its message", "type", m.EntityType, "entity", m.EntityID, "message", m.ID, "err", err)
			}
			x.delivered(it, store.Reply{RequestID: m.ID, CreatedAt: x.clk.Now()})
			return
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errs.ErrDecode) {
			// no retry can decode it: park it where an operator sees it
			x.deadLetter(ctx, it, fence, errs.Wrap(errs.CodeDeadLettered, err, fmt.Sprintf("message %d has an undecodable payload", m.ID)))
			return
		}
		if err == nil || IsPermanent(err) {
			c := store.Completion{MessageID: m.ID, Shard: m.Shard, Fence: fence, Payload: payload}
			if err != nil {
				c.Payload, c.Error = nil, errs.Encode(unwrapPermanent(err))
			}
			x.complete(ctx, it, c)
			return
		}
		x.log.Warn("delivery: handler failed", "type", m.EntityType, "entity", m.EntityID, "message", m.ID, "attempt", attempt, "max_attempts", it.t.opts.MaxAttempts, "err", err)
		if attempt >= it.t.opts.MaxAttempts {
			x.deadLetter(ctx, it, fence, errs.Wrap(errs.CodeDeadLettered, err, fmt.Sprintf("message %d failed %d times", m.ID, attempt)))
			return
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		rerr := x.d.RecordAttempt(wctx, fence, m.ID, err.Error())
		cancel()
		if rerr != nil {
			x.log.Warn("delivery: recording attempt failed; releasing the claim so the message is redelivered", "message", m.ID, "err", rerr)
			if !errors.Is(rerr, errs.ErrFenced) {
				x.abandon(ctx, fence, m.ID)
			}
			return
		}
		x.mu.Lock()
		x.stats.Retried++
		x.mu.Unlock()
		m.LastError = err.Error()
		attempt++
		m.Attempts = attempt
		if x.clk.Sleep(ctx, it.t.opts.Backoff(attempt-1)) != nil {
			return
		}
	}
}

func unwrapPermanent(err error) error {
	var p *Permanent
	if errors.As(err, &p) {
		return p.Err
	}
	return err
}

func (x *Deliverer) complete(ctx context.Context, it item, c store.Completion) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := x.d.Complete(wctx, c); err != nil {
		x.fenced(ctx, it, c.Fence, err)
		return
	}
	x.delivered(it, store.Reply{RequestID: it.m.ID, Payload: c.Payload, Error: c.Error, CreatedAt: x.clk.Now()})
}

// delivered counts a completed message and hands its reply on.
func (x *Deliverer) delivered(it item, r store.Reply) {
	x.mu.Lock()
	x.stats.Delivered++
	x.mu.Unlock()
	x.opts.OnReply(it.m, r)
}

func (x *Deliverer) deadLetter(ctx context.Context, it item, fence store.Fence, cause *errs.Error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	replyErr := errs.Encode(cause)
	if err := x.d.DeadLetter(wctx, fence, it.m.Shard, it.m.ID, cause.Error(), replyErr); err != nil {
		x.fenced(ctx, it, fence, err)
		return
	}
	x.log.Error("delivery: message dead-lettered", "type", it.m.EntityType, "entity", it.m.EntityID, "message", it.m.ID, "err", cause)
	x.mu.Lock()
	x.stats.Dead++
	x.mu.Unlock()
	x.opts.OnReply(it.m, store.Reply{RequestID: it.m.ID, Error: replyErr, CreatedAt: x.clk.Now()})
}

func (x *Deliverer) fenced(ctx context.Context, it item, fence store.Fence, err error) {
	x.mu.Lock()
	x.stats.Fenced++
	x.mu.Unlock()
	if errors.Is(err, errs.ErrFenced) {
		x.log.Info("delivery: outcome not written: the shard moved", "message", it.m.ID, "shard", it.m.Shard)
		return
	}
	x.log.Warn("delivery: writing outcome failed; releasing the claim so the message is redelivered", "message", it.m.ID, "err", err)
	x.abandon(ctx, fence, it.m.ID)
}

// invoke runs the handler, turning a panic into an error. The error, which
// goes back to the caller and into the message's row, carries the panic's
// value only; the stack (file paths, code layout) goes to log.
func invoke(ctx context.Context, log *slog.Logger, h Handler, m store.Message) (payload []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("delivery: handler panicked", "type", m.EntityType, "entity", m.EntityID, "message", m.ID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = errs.New(errs.CodeHandlerPanic, "handler for %s/%s panicked: %v", m.EntityType, m.EntityID, r)
		}
	}()
	return h(ctx, m)
}

// Volatile runs a non-persisted message through the entity's mailbox, if we
// hold its shard.
func (x *Deliverer) Volatile(ctx context.Context, m store.Message) ([]byte, error) {
	x.mu.Lock()
	st := x.shards[m.Shard]
	t := x.types[m.EntityType]
	if t == nil {
		x.mu.Unlock()
		return nil, errs.New(errs.CodeUnregistered, "entity type %q is not registered on this runner", m.EntityType)
	}
	if t.opts.StoreOnly {
		x.mu.Unlock()
		return nil, errs.New(errs.CodeInvalidArgument, "entity type %q takes only stored messages, not volatile ones", m.EntityType)
	}
	if st == nil || st.draining {
		x.mu.Unlock()
		return nil, errs.New(errs.CodeNotOwner, "this runner does not hold shard %s", m.Shard)
	}
	call := &volatileCall{done: make(chan volatileResult, 1)}
	m.ClaimEpoch = st.epoch
	x.pushLocked(item{m: m, st: st, t: t, volatile: call})
	x.mu.Unlock()
	select {
	case r := <-call.done:
		return r.payload, r.err
	case <-ctx.Done():
		return nil, errs.Wrap(errs.CodeDeadline, ctx.Err(), "volatile message")
	}
}
