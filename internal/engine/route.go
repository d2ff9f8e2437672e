package engine

// Routed starts: a start for a shard another runner holds is sent to that
// runner, which inserts the run already claimed and runs it at once (no
// wake-up, no read of the mailbox and of the run by the owner), and pushes
// the run's end back to the starter (no polling of the run's row). Where
// routing cannot help (we hold the shard, no holder is known, the holder
// refuses or cannot be reached) the caller starts the run here, as an
// unrouted start always did.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/rpc"
)

const (
	// routeTimeout bounds a routed start: past it the run is started here
	// (its id makes that idempotent), so a frozen holder costs one start
	// this long, not every start.
	routeTimeout = 2 * time.Second
	// routeAvoid is how long a holder whose routed start failed gets none.
	routeAvoid = 10 * time.Second
	// maxRouting bounds the starts in flight to one holder; more are
	// started here. Well under rpc.DefaultPerPeer, which counts every
	// call from one address (instances sharing a host share it).
	maxRouting = 16
)

// StartHandler runs a start that the runner from routed here; body is the
// workflow layer's encoding, and so is the result.
type StartHandler func(ctx context.Context, from string, body []byte) ([]byte, error)

// RunEndedHandler takes the push, from the runner that ran it, saying that
// a run this runner routed there stopped executing there (it finished,
// suspended, or its shard moved). It carries nothing else: the receiver
// reads the run's row.
type RunEndedHandler func(from, runID string)

// routes holds the handlers of routed starts and the holders to avoid.
type routes struct {
	mu     sync.Mutex
	start  StartHandler
	ended  RunEndedHandler
	avoid  map[string]time.Time  // holder -> until when no start is routed to it
	pushes map[string]*pushQueue // starter -> ends not yet pushed to it
	flying map[string]int        // holder -> routed starts in flight
	n      RouteCounts
}

// RouteCounts count this runner's routed starts by outcome since it
// started: sent and answered, refused by a runner that did not hold the
// shard (a handover, a stale view), failed (the holder did not answer in
// time or could not be reached), not sent to a holder being avoided after
// such a failure, and busy. Starts that fell back were started here.
type RouteCounts struct {
	Routed, NotOwner, Failed, Avoided int64
	// Busy: not sent, maxRouting starts to that holder being in flight,
	// or refused by it for too many calls in flight.
	Busy int64
}

// RouteCounts returns the counts of routed starts.
func (e *Engine) RouteCounts() RouteCounts {
	e.routes.mu.Lock()
	defer e.routes.mu.Unlock()
	return e.routes.n
}

func (e *Engine) countRoute(f func(*RouteCounts)) {
	e.routes.mu.Lock()
	defer e.routes.mu.Unlock()
	f(&e.routes.n)
}

// HandleStarts installs the handlers of routed starts (the workflow layer).
// Without them this runner routes no start and refuses those routed here.
func (e *Engine) HandleStarts(start StartHandler, ended RunEndedHandler) {
	e.routes.mu.Lock()
	defer e.routes.mu.Unlock()
	e.routes.start, e.routes.ended = start, ended
}

func (e *Engine) startHandler() StartHandler {
	e.routes.mu.Lock()
	defer e.routes.mu.Unlock()
	return e.routes.start
}

// RouteTarget is the runner to route a start for shard to, whose body
// is size bytes, or "" to start it here: we hold the shard, no holder is
// known, or routing is off (no cluster, no handlers, a body too large, a
// holder whose last routed start failed).
func (e *Engine) RouteTarget(shard string, size int) string {
	if e.runner == nil || e.clientOnly || !e.cfg.Clustered() || e.private || e.startHandler() == nil || e.deliv.Epoch(shard) > 0 || int64(size) > e.cfg.RPCMaxBody/2 {
		return ""
	}
	owner := e.runner.Owner(shard)
	if owner == "" || owner == e.address {
		return ""
	}
	if e.avoiding(owner) {
		e.countRoute(func(n *RouteCounts) { n.Avoided++ })
		return ""
	}
	e.routes.mu.Lock()
	defer e.routes.mu.Unlock()
	if e.routes.flying[owner] >= maxRouting {
		e.routes.n.Busy++
		return ""
	}
	if e.routes.flying == nil {
		e.routes.flying = map[string]int{}
	}
	e.routes.flying[owner]++ // until RouteStart returns
	return owner
}

// RouteStart sends a start for shard to owner (a RouteTarget answer, each
// followed by exactly one RouteStart) and returns
// what it answered. routed=false: owner refused it or could not be
// reached, so the run may or may not exist there: start it here by the
// same id. An error with routed=true is the start's own (a bad input, the
// holder's database failing) or ctx's end.
func (e *Engine) RouteStart(ctx context.Context, owner, shard string, body []byte) (out []byte, routed bool, err error) {
	defer func() {
		e.routes.mu.Lock()
		if e.routes.flying[owner]--; e.routes.flying[owner] <= 0 {
			delete(e.routes.flying, owner)
		}
		e.routes.mu.Unlock()
	}()
	rctx, cancel := context.WithTimeout(ctx, routeTimeout)
	defer cancel()
	out, err = e.client.Start(rctx, owner, rpc.StartRequest{Shard: shard, Body: body})
	switch {
	case err == nil:
		e.countRoute(func(n *RouteCounts) { n.Routed++ })
		return out, true, nil
	case ctx.Err() != nil:
		return nil, true, errs.Wrap(errs.CodeDeadline, ctx.Err(), "starting a run on "+owner)
	case errors.Is(err, rpc.ErrBusy):
		e.countRoute(func(n *RouteCounts) { n.Busy++ })
		return nil, false, nil
	case errors.Is(err, errs.ErrNotOwner):
		e.countRoute(func(n *RouteCounts) { n.NotOwner++ })
		return nil, false, nil // a handover, or a stale view: nothing was started
	case errors.Is(err, errs.ErrUnavailable), errors.Is(err, errs.ErrUnauthenticated), errors.Is(err, errs.ErrDeadline), rctx.Err() != nil,
		// The start was checked here: a holder that cannot read it runs
		// another version (or none: 404).
		errors.Is(err, errs.ErrDecode), errors.Is(err, errs.ErrInvalidArgument):
		e.log.Debug("runner rpc: a routed start failed; starting it here", "owner", owner, "shard", shard, "err", err)
		e.avoidFor(owner, routeAvoid)
		e.countRoute(func(n *RouteCounts) { n.Failed++ })
		return nil, false, nil
	}
	return nil, true, err
}

func (e *Engine) avoiding(owner string) bool {
	e.routes.mu.Lock()
	defer e.routes.mu.Unlock()
	until, ok := e.routes.avoid[owner]
	if ok && time.Now().After(until) {
		delete(e.routes.avoid, owner)
		return false
	}
	return ok
}

func (e *Engine) avoidFor(owner string, d time.Duration) {
	e.routes.mu.Lock()
	defer e.routes.mu.Unlock()
	if e.routes.avoid == nil {
		e.routes.avoid = map[string]time.Time{}
	}
	e.routes.avoid[owner] = time.Now().Add(d)
}

// onRPCStart runs a start routed here, for a shard this runner holds.
func (e *Engine) onRPCStart(ctx context.Context, from string, req rpc.StartRequest) ([]byte, error) {
	h := e.startHandler()
	if h == nil || e.deliv.Epoch(req.Shard) == 0 {
		return nil, errs.New(errs.CodeNotOwner, "this runner does not hold shard %s", req.Shard)
	}
	// The run's end is pushed to from: only to a runner of this cluster
	// (a signed caller could otherwise aim those calls anywhere). One that
	// registered since our last listing starts it itself this once.
	if !e.runner.Listed(from) {
		return nil, errs.New(errs.CodeNotOwner, "the starter %s is not a runner in this runner's listing of the cluster", from)
	}
	return h(ctx, from, req.Body)
}

func (e *Engine) onRPCRunEnded(from string, req rpc.RunEnded) {
	e.routes.mu.Lock()
	h := e.routes.ended
	e.routes.mu.Unlock()
	if h != nil {
		h(from, req.RunID)
	}
}

// PushRunEnded tells starter, in the background, that a run it routed
// here stopped executing. The ends for one starter go out in batches, one
// call at a time, so a burst of finishes is a few calls, not one each
// beyond the starter's per-peer cap. Best effort: a starter that misses
// one reads the store.
func (e *Engine) PushRunEnded(starter, runID string) {
	e.routes.mu.Lock()
	defer e.routes.mu.Unlock()
	if e.routes.pushes == nil {
		e.routes.pushes = map[string]*pushQueue{}
	}
	q := e.routes.pushes[starter]
	if q == nil {
		q = &pushQueue{}
		e.routes.pushes[starter] = q
	}
	if len(q.pending) >= maxPending {
		return // the starter is not keeping up (or is gone): it polls
	}
	q.pending = append(q.pending, rpc.RunEnded{RunID: runID})
	if !q.running {
		q.running = true
		go e.pushLoop(starter, q)
	}
}

// maxPending bounds the ends queued for one starter.
const maxPending = 16 * rpc.MaxRunsEnded

// pushQueue holds the ends not yet pushed to one starter.
type pushQueue struct {
	pending []rpc.RunEnded
	running bool // a pushLoop drains it
}

// pushLoop pushes q's ends in batches until it is empty.
func (e *Engine) pushLoop(starter string, q *pushQueue) {
	for {
		e.routes.mu.Lock()
		n := min(len(q.pending), rpc.MaxRunsEnded)
		if n == 0 {
			q.running = false
			delete(e.routes.pushes, starter)
			e.routes.mu.Unlock()
			return
		}
		batch := q.pending[:n:n]
		q.pending = q.pending[n:]
		e.routes.mu.Unlock()
		// Not e.bg: Close cancels it before the shards drain, and the runs
		// that end while they drain are pushed too.
		ctx, cancel := context.WithTimeout(context.Background(), routeTimeout)
		err := e.client.PushRunsEnded(ctx, starter, rpc.RunsEnded{Runs: batch})
		cancel()
		if err != nil {
			e.log.Debug("runner rpc: the end of routed runs was not pushed; their starter reads the store", "starter", starter, "runs", len(batch), "err", err)
		}
	}
}
