package workflow

// Routed starts (engine/route.go): a start for a shard another runner holds
// is run by that runner, which pushes the run's end back here, so Result
// here needs no read of the run's row while it executes there.

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// routedStart is a start as sent to the shard's holder: what startRequest
// built, minus what the holder derives (the shard, the start message).
type routedStart struct {
	Exec    store.Execution
	Context store.StartContext
	Headers map[string]string `json:",omitempty"`
}

// routedStarted is the holder's answer.
type routedStarted struct {
	Exec     store.Execution
	Existing bool `json:",omitempty"`
	// Pushes: the holder runs it now and will push its end. Otherwise
	// (it was there already, or goes to the mailbox) the starter polls.
	Pushes bool `json:",omitempty"`
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
	body, err := json.Marshal(routedStart{Exec: q.Exec, Context: q.Context, Headers: q.Message.Headers})
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
	return got.Exec, got.Existing, true, nil
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
	x = store.Execution{ID: x.ID, Name: x.Name, Shard: shard, Key: x.Key, Input: x.Input, ParentID: x.ParentID, ParentClose: x.ParentClose}
	sc := in.Context
	sc.ExecutionID = ""
	msg := &store.Message{Shard: shard, EntityType: typ, EntityID: x.ID, Tag: TagStart, DedupeKey: store.RunStartKey(x.ID), Headers: in.Headers}
	// Not cut short when the starter gives up waiting (it then starts the
	// run itself, by the same id): a start cancelled halfway could leave
	// its message claimed here and not dispatched until the claim expires.
	stored, existing, err := w.startHere(context.WithoutCancel(ctx), store.StartRequest{Exec: x, Context: sc, Message: msg}, from)
	if err != nil {
		return nil, err
	}
	starter, _ := w.starters.get(stored.ID)
	return json.Marshal(routedStarted{Exec: stored, Existing: existing, Pushes: !existing && starter == from})
}

// onRunEnded takes the push of a routed run's end from the runner that ran
// it: the finished run goes to Result's waiters here, or, for a run that
// stopped executing there, the waiters read the store.
func (w *Engine) onRunEnded(from, id string, body []byte) {
	if !w.routed.takeIf(id, from) {
		return // not routed there by us, or pushed already
	}
	x := store.Execution{ID: id}
	if len(body) > 0 {
		var done store.Execution
		if err := json.Unmarshal(body, &done); err == nil && done.ID == id && done.Status.Terminal() {
			x = done
		}
	}
	w.notifyLocal(x, w.ends.Add(1))
}

// pushEnded pushes x's end to the runner that routed it here, if one did.
func (w *Engine) pushEnded(x store.Execution) {
	starter, ok := w.starters.take(x.ID)
	if !ok {
		return
	}
	var body []byte
	if x.Status.Terminal() {
		body, _ = json.Marshal(x)
	}
	w.e.PushRunEnded(starter, x.ID, body)
}
