package workflow

// Routed starts (engine/route.go): a start for a shard another runner holds
// is run by that runner, which pushes back when the run stops executing
// there, so Result here reads the run's row once, when it ended, instead of
// polling it.
//
// The runner port is signed with the cluster secret, and whoever holds the
// secret can call it (see docs/security.md). So a holder takes from a
// routed start only what a plain start carries: a workflow name, an input,
// a fresh run id of the form of newRunID (which no keyed id or child id
// has), and a trace. It refuses a key, a parent or a subject, and records
// the run's source as SourceRouted, whatever the caller claims. A push only
// wakes the waiters here, which read the run's row: what a push says of
// the run is never believed.

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/store"
)

// SourceRouted is the source recorded for a run started through another
// runner of the cluster (its start context's Source): the holder cannot
// tell where the start came from, so it records that it was routed.
const SourceRouted = "routed"

// routedStart is a start as sent to the shard's holder: a plain start's
// run (id, name, input) and trace. The holder derives the rest (the
// shard, the start message, the start context); it refuses a start whose
// run has a key, a parent or a start context beyond the trace.
type routedStart struct {
	Exec    store.Execution
	Context store.StartContext
	Headers map[string]string `json:",omitempty"`
}

// routedStarted is the holder's answer. For a run that existed already,
// Exec holds its id only: the starter reads the row.
type routedStarted struct {
	Exec     store.Execution
	Existing bool `json:",omitempty"`
	// Pushes: the holder runs it now and will push its end. Otherwise
	// (it was there already, or goes to the mailbox) the starter polls.
	Pushes bool `json:",omitempty"`
}

// routable reports whether q is a plain start, the only kind routed: no
// key (the id of a keyed run derives from its key, and a holder would have
// to take the caller's word for both), no parent (a child's id names its
// parent's journal entry), no subject, the default source, an id
// newRunID made, and a start due now (a routed start carries no StartAt;
// a queued start has no start message to route).
func routable(q store.StartRequest) bool {
	sc := q.Context
	return q.Exec.Key == "" && q.Exec.ParentID == "" && q.Exec.ParentClose == "" && sc.Subject == "" && sc.ParentID == "" &&
		sc.Source == "api" && isPlainRunID(q.Exec.ID) && q.Message != nil && q.Message.DeliverAt.IsZero()
}

// checkRoutedStart refuses what a routed start may not carry (see
// routable). The refusal is errs.CodeNotOwner, after which a starter of an
// older version starts the run itself, as before routing.
func checkRoutedStart(in routedStart) error {
	x, sc := in.Exec, in.Context
	switch {
	case !isPlainRunID(x.ID):
		return errs.New(errs.CodeNotOwner, "a routed start takes only a fresh run id of a start without a key, not %.40q", x.ID)
	case x.Key != "":
		return errs.New(errs.CodeNotOwner, "a routed start takes no idempotency key")
	case x.ParentID != "" || x.ParentClose != "" || sc.ParentID != "" || sc.ParentClose != "":
		return errs.New(errs.CodeNotOwner, "a routed start takes no parent")
	case sc.Subject != "" || (sc.Source != "" && sc.Source != "api"):
		return errs.New(errs.CodeNotOwner, "a routed start takes no subject and no source")
	}
	return nil
}

// routedHeaders keeps of a routed start's message headers only the trace
// context, well-formed.
func routedHeaders(h map[string]string) map[string]string {
	tp := validTrace(h[observe.HeaderTraceparent])
	if tp == "" {
		return nil
	}
	out := map[string]string{observe.HeaderTraceparent: tp}
	if ts := h["tracestate"]; ts != "" && len(ts) <= 512 && !strings.ContainsAny(ts, "\r\n") {
		out["tracestate"] = ts
	}
	return out
}

// validTrace is tp if it is a well-formed W3C traceparent, else "".
func validTrace(tp string) string {
	if tp == "" || len(tp) > 64 || observe.TraceID(tp) == "" {
		return ""
	}
	return tp
}

// peerRuns maps run ids to a peer (the runner a run was routed to, or the
// one that routed it here) until the run's end is pushed. An entry whose
// push never comes (the peer died) is swept after peerRunTTL.
type peerRuns struct {
	mu    sync.Mutex
	m     map[string]peerRun
	swept time.Time
}

type peerRun struct {
	peer string
	at   time.Time
}

// peerRunTTL bounds how long a run waits for its end to be pushed before
// it is treated as unrouted (Result polls its row).
const peerRunTTL = 10 * time.Minute

func (p *peerRuns) put(id, peer string) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]peerRun{}
	}
	if now.Sub(p.swept) > peerRunTTL/10 {
		p.swept = now
		for k, r := range p.m {
			if now.Sub(r.at) > peerRunTTL {
				delete(p.m, k)
			}
		}
	}
	p.m[id] = peerRun{peer: peer, at: now}
}

func (p *peerRuns) get(id string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.m[id]
	return r.peer, ok
}

// since is when id's entry was made.
func (p *peerRuns) since(id string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.m[id]
	return r.at, ok
}

// take removes id's entry and returns its peer.
func (p *peerRuns) take(id string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.m[id]
	delete(p.m, id)
	return r.peer, ok
}

// takeIf removes id's entry if it names peer.
func (p *peerRuns) takeIf(id, peer string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.m[id]; ok && r.peer == peer {
		delete(p.m, id)
		return true
	}
	return false
}

// routeStart sends q to its shard's holder. routed=false: start it here.
func (w *Engine) routeStart(ctx context.Context, q store.StartRequest) (x store.Execution, existing, routed bool, err error) {
	if !routable(q) {
		return x, false, false, nil
	}
	body, err := json.Marshal(routedStart{
		Exec:    store.Execution{ID: q.Exec.ID, Name: q.Exec.Name, Input: q.Exec.Input},
		Context: store.StartContext{Trace: q.Context.Trace},
		Headers: q.Message.Headers,
	})
	if err != nil {
		return x, false, false, nil
	}
	owner := w.e.RouteTarget(q.Message.Shard, len(body))
	if owner == "" {
		return x, false, false, nil
	}
	// Registered before the call: the run may end there, and its end be
	// pushed, before the answer arrives.
	w.routed.put(q.Exec.ID, owner)
	out, routed, err := w.e.RouteStart(ctx, owner, q.Message.Shard, body)
	if !routed || err != nil {
		w.routed.take(q.Exec.ID)
		return x, false, routed, err
	}
	var got routedStarted
	if err := json.Unmarshal(out, &got); err != nil || got.Exec.ID != q.Exec.ID {
		w.routed.take(q.Exec.ID)
		return x, false, true, errs.New(errs.CodeDecode, "runner %s answered a routed start of %s with another run or an undecodable one", owner, q.Exec.ID)
	}
	if !got.Pushes {
		w.routed.take(q.Exec.ID)
	}
	if got.Existing {
		// The holder answers an existing run with its id only.
		x, err := w.ws.GetExecution(ctx, q.Exec.ID)
		return x, true, true, err
	}
	return got.Exec, false, true, nil
}

// onRoutedStart starts, as if it had been started here, a run a peer
// routed to this runner because it holds the run's shard, and remembers
// the peer so that the run's end is pushed to it.
func (w *Engine) onRoutedStart(ctx context.Context, from string, body []byte) ([]byte, error) {
	var in routedStart
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errs.Wrap(errs.CodeDecode, err, "bad routed start")
	}
	x := in.Exec
	if x.ID == "" || x.Name == "" {
		return nil, errs.New(errs.CodeInvalidArgument, "a routed start needs a run id and a workflow name")
	}
	if err := checkRoutedStart(in); err != nil {
		return nil, err
	}
	if err := checkPayload("workflow "+x.Name+": input", x.Input); err != nil {
		return nil, err
	}
	typ := EntityPrefix + x.Name
	shard := w.e.ShardOf(typ, x.ID, "")
	if w.e.ClaimFor(shard, typ) == nil {
		// Not held here, or a workflow this runner does not host: the
		// starter inserts it and its owner reads it, as before routing.
		return nil, errs.New(errs.CodeNotOwner, "this runner does not run %s on shard %s", typ, shard)
	}
	x = store.Execution{ID: x.ID, Name: x.Name, Shard: shard, Input: x.Input}
	// Who started it, from where, is what the caller claims: recorded as
	// routed, with the caller's trace if it is one.
	sc := store.StartContext{Source: SourceRouted, Trace: validTrace(in.Context.Trace)}
	msg := &store.Message{Shard: shard, EntityType: typ, EntityID: x.ID, Tag: TagStart, DedupeKey: store.RunStartKey(x.ID), Headers: routedHeaders(in.Headers)}
	// Not cut short when the starter gives up waiting (it then starts the
	// run itself, by the same id): a start cancelled halfway could leave
	// its message claimed here and not dispatched until the claim expires.
	stored, existing, err := w.startHere(context.WithoutCancel(ctx), store.StartRequest{Exec: x, Context: sc, Message: msg}, from)
	if err != nil {
		return nil, err
	}
	if existing {
		// Not the row: an existing run is not the caller's to read.
		return json.Marshal(routedStarted{Exec: store.Execution{ID: stored.ID}, Existing: true})
	}
	starter, _ := w.starters.get(stored.ID)
	return json.Marshal(routedStarted{Exec: stored, Pushes: starter == from})
}

// onRunEnded takes the push, from the runner that ran it, saying that a
// run routed there stopped executing there: Result's waiters here read
// its row. Only a nudge: the push carries nothing they would believe.
func (w *Engine) onRunEnded(from, id string) {
	if !w.routed.takeIf(id, from) {
		return // not routed there by us, or pushed already
	}
	w.nudgeWaiters(id)
}

// pushEnded tells the runner that routed x here, if one did, that x
// stopped executing here.
func (w *Engine) pushEnded(x store.Execution) {
	if starter, ok := w.starters.take(x.ID); ok {
		w.e.PushRunEnded(starter, x.ID)
	}
}
