// Message cases: enqueue and its dedupe, claims, fencing, releases and
// attempts, dead letters, delayed delivery, drain statistics.

package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func testEnqueueDedupe(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	m := msg("default/1", "order", "o1", `{"a":1}`)
	m.DedupeKey = "k1"
	r1 := must(d.Enqueue(ctx, m, nil))(t)
	if r1.ID <= 0 || r1.Duplicate {
		t.Fatalf("first enqueue %+v", r1)
	}
	if m.ID != r1.ID || m.DeliverAt.IsZero() {
		t.Fatalf("enqueue must fill ID and DeliverAt: %+v", m)
	}
	r2 := must(d.Enqueue(ctx, msg("default/1", "order", "o1", `{"a":2}`), nil))(t)
	if r2.ID <= r1.ID {
		t.Fatalf("ids must increase: %d then %d", r1.ID, r2.ID)
	}
	dup := msg("default/1", "order", "o1", `{"a":3}`)
	dup.DedupeKey = "k1"
	r3 := must(d.Enqueue(ctx, dup, nil))(t)
	if !r3.Duplicate || r3.ID != r1.ID || r3.Reply != nil {
		t.Fatalf("duplicate: %+v", r3)
	}
	got := must(d.GetMessage(ctx, r1.ID))(t)
	if string(got.Payload) != `{"a":1}` || got.Headers["h"] != "v" || got.State != store.StatePending || got.EntityType != "order" || got.EntityID != "o1" || got.Tag != "t" || got.DedupeKey != "k1" {
		t.Fatalf("stored message: %+v", got)
	}
	// complete it; the duplicate now returns the reply
	l, epoch := own(t, d, "me:1", "default/1")
	_ = l
	claimed := must(d.Claim(ctx, store.ClaimRequest{Owner: "me:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 1, ClaimTTL: time.Minute}))(t)
	if len(claimed) != 1 || claimed[0].ID != r1.ID {
		t.Fatalf("claim: %+v", claimed)
	}
	check(t, d.Complete(ctx, store.Completion{MessageID: r1.ID, Shard: "default/1", Fence: store.Fence{Owner: "me:1", Epoch: epoch}, Payload: []byte(`"ok"`)}))
	r4 := must(d.Enqueue(ctx, dup, nil))(t)
	if !r4.Duplicate || r4.Reply == nil || string(r4.Reply.Payload) != `"ok"` || r4.Reply.RequestID != r1.ID {
		t.Fatalf("duplicate after completion must carry the reply: %+v", r4)
	}
	// a long dedupe key works
	long := msg("default/1", "order", "o2", "{}")
	long.DedupeKey = string(slices.Repeat([]byte("x"), 600))
	a := must(d.Enqueue(ctx, long, nil))(t)
	b := must(d.Enqueue(ctx, long, nil))(t)
	if !b.Duplicate || b.ID != a.ID {
		t.Fatalf("long dedupe key: %+v %+v", a, b)
	}
	if _, err := d.GetMessage(ctx, 1<<50); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("missing message: %v", err)
	}
}

func testClaimRules(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	_, e1 := own(t, d, "me:1", "default/1")
	_, _ = own(t, d, "other:1", "default/2")
	var ids []int64
	for i := 0; i < 5; i++ {
		ids = append(ids, must(d.Enqueue(ctx, msg("default/1", "order", fmt.Sprint(i), "{}"), nil))(t).ID)
	}
	unreg := must(d.Enqueue(ctx, msg("default/1", "invoice", "i", "{}"), nil))(t).ID
	foreign := must(d.Enqueue(ctx, msg("default/2", "order", "x", "{}"), nil))(t).ID
	unowned := must(d.Enqueue(ctx, msg("default/3", "order", "y", "{}"), nil))(t).ID
	req := store.ClaimRequest{Owner: "me:1", Types: []string{"order"}, Shards: []string{"default/1", "default/2", "default/3"}, Limit: 3, ClaimTTL: time.Minute}
	got := must(d.Claim(ctx, req))(t)
	if len(got) != 3 || got[0].ID != ids[0] || got[1].ID != ids[1] || got[2].ID != ids[2] {
		t.Fatalf("first batch must be the 3 oldest in order: %+v", got)
	}
	for _, m := range got {
		if m.State != store.StateClaimed || m.ClaimedBy != "me:1" || m.ClaimEpoch != e1 || m.Attempts != 1 || m.ClaimExpiresAt.IsZero() {
			t.Fatalf("claimed message fields: %+v", m)
		}
	}
	got = must(d.Claim(ctx, req))(t)
	if len(got) != 2 || got[0].ID != ids[3] || got[1].ID != ids[4] {
		t.Fatalf("second batch: %+v", got)
	}
	if got = must(d.Claim(ctx, req))(t); len(got) != 0 {
		t.Fatalf("nothing left for me, got %+v", got)
	}
	for id, why := range map[int64]string{unreg: "an unregistered type", foreign: "another owner's shard", unowned: "an unowned shard"} {
		m := must(d.GetMessage(ctx, id))(t)
		if m.State != store.StatePending || m.ClaimedBy != "" || m.Attempts != 0 {
			t.Fatalf("a message of %s must stay untouched: %+v", why, m)
		}
	}
	// registering the type makes its backlog claimable at once
	req.Types = []string{"order", "invoice"}
	got = must(d.Claim(ctx, req))(t)
	if len(got) != 1 || got[0].ID != unreg {
		t.Fatalf("after registering invoice: %+v", got)
	}
	// empty types or shards claim nothing
	if got := must(d.Claim(ctx, store.ClaimRequest{Owner: "me:1", Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}))(t); len(got) != 0 {
		t.Fatalf("no types: %+v", got)
	}
}

func testClaimConcurrent(t *testing.T, factory Factory, opts Options) {
	ctx := ctxT(t)
	d, clock := open(t, factory)
	d2 := second(t, opts, d, clock)
	_, _ = own(t, d, "me:1", "default/1")
	const n = 200
	for i := 0; i < n; i++ {
		must(d.Enqueue(ctx, msg("default/1", "order", fmt.Sprint(i%7), "{}"), nil))(t)
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		dd := d
		if w%2 == 1 {
			dd = d2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := dd.Claim(ctx, store.ClaimRequest{Owner: "me:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 7, ClaimTTL: time.Minute})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					seen[m.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d distinct messages, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("message %d claimed %d times while its claim was live", id, c)
		}
	}
}

func testFencing(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	mode, _, err := d.ResolveLockMode(ctx, store.LockAuto)
	check(t, err)
	a := locker(t, d, mode, "a:1")
	e1, _, err := a.Acquire(ctx, "default/1", time.Minute)
	check(t, err)
	id1 := must(d.Enqueue(ctx, msg("default/1", "order", "1", "{}"), nil))(t).ID
	id2 := must(d.Enqueue(ctx, msg("default/1", "order", "2", "{}"), nil))(t).ID
	got := must(d.Claim(ctx, store.ClaimRequest{Owner: "a:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}))(t)
	if len(got) != 2 {
		t.Fatalf("claim %+v", got)
	}
	check(t, d.Complete(ctx, store.Completion{MessageID: id1, Shard: "default/1", Fence: store.Fence{Owner: "a:1", Epoch: e1}, Payload: []byte("1")}))
	// a wrong epoch is fenced
	if err := d.Complete(ctx, store.Completion{MessageID: id2, Shard: "default/1", Fence: store.Fence{Owner: "a:1", Epoch: e1 + 1}}); !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("wrong epoch: want fenced, got %v", err)
	}
	// the shard moves to b: a's live claim on id2 becomes void
	check(t, a.Release(ctx, "default/1", e1))
	b := locker(t, d, mode, "b:1")
	e2, ok, err := b.Acquire(ctx, "default/1", time.Minute)
	check(t, err)
	if !ok {
		t.Fatal("b acquire")
	}
	if err := d.Complete(ctx, store.Completion{MessageID: id2, Shard: "default/1", Fence: store.Fence{Owner: "a:1", Epoch: e1}}); !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("a completing after losing the shard: want fenced, got %v", err)
	}
	if err := d.DeadLetter(ctx, store.Fence{Owner: "a:1", Epoch: e1}, "default/1", id2, "x", nil); !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("a dead-lettering after losing the shard: want fenced, got %v", err)
	}
	got = must(d.Claim(ctx, store.ClaimRequest{Owner: "b:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}))(t)
	if len(got) != 1 || got[0].ID != id2 || got[0].ClaimEpoch != e2 || got[0].Attempts != 2 {
		t.Fatalf("b must re-claim the void claim with its epoch: %+v", got)
	}
	if got := must(d.Claim(ctx, store.ClaimRequest{Owner: "a:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}))(t); len(got) != 0 {
		t.Fatalf("a claims nothing on a shard it lost: %+v", got)
	}
	check(t, d.Complete(ctx, store.Completion{MessageID: id2, Shard: "default/1", Fence: store.Fence{Owner: "b:1", Epoch: e2}, Payload: []byte("2")}))
	if err := d.Complete(ctx, store.Completion{MessageID: id2, Shard: "default/1", Fence: store.Fence{Owner: "b:1", Epoch: e2}, Payload: []byte("again")}); !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("completing twice: want fenced, got %v", err)
	}
	r := must(d.GetReply(ctx, id2))(t)
	if r == nil || string(r.Payload) != "2" || r.Error != nil {
		t.Fatalf("reply %+v", r)
	}
	if r := must(d.GetReply(ctx, 1<<50))(t); r != nil {
		t.Fatalf("reply of a missing request: %+v", r)
	}
	m := must(d.GetMessage(ctx, id2))(t)
	if m.State != store.StateProcessed || m.ProcessedAt.IsZero() {
		t.Fatalf("processed state: %+v", m)
	}
}

func testReleaseAndAttempts(t *testing.T, d store.Driver, clock *Clock) {
	ctx := ctxT(t)
	_, e := own(t, d, "a:1", "default/1")
	id := must(d.Enqueue(ctx, msg("default/1", "order", "1", "{}"), nil))(t).ID
	req := store.ClaimRequest{Owner: "a:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}
	must(d.Claim(ctx, req))(t)
	f := store.Fence{Owner: "a:1", Epoch: e}
	check(t, d.RecordAttempt(ctx, f, id, "boom"))
	m := must(d.GetMessage(ctx, id))(t)
	if m.Attempts != 2 || m.LastError != "boom" || m.State != store.StateClaimed {
		t.Fatalf("after attempt: %+v", m)
	}
	if err := d.RecordAttempt(ctx, store.Fence{Owner: "z:1", Epoch: e}, id, "x"); !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("attempt under another fence: %v", err)
	}
	// a release by a stranger does nothing
	check(t, d.Release(ctx, store.Fence{Owner: "z:1", Epoch: e}, []int64{id}))
	if m := must(d.GetMessage(ctx, id))(t); m.State != store.StateClaimed {
		t.Fatalf("stranger released: %+v", m)
	}
	check(t, d.Release(ctx, f, []int64{id}))
	m = must(d.GetMessage(ctx, id))(t)
	if m.State != store.StatePending || m.ClaimedBy != "" {
		t.Fatalf("after release: %+v", m)
	}
	got := must(d.Claim(ctx, req))(t)
	if len(got) != 1 || got[0].Attempts != 3 {
		t.Fatalf("reclaim after release: %+v", got)
	}
	// expired claims are void: once its ttl has passed the owner reclaims
	check(t, d.Release(ctx, f, []int64{id}))
	req.ClaimTTL = time.Minute
	must(d.Claim(ctx, req))(t)
	if got := must(d.Claim(ctx, req))(t); len(got) != 0 {
		t.Fatalf("a live claim must not be reclaimed: %+v", got)
	}
	check(t, d.ExtendClaims(ctx, "a:1", 3*time.Minute))
	clock.Advance(2 * time.Minute) // past the claim's ttl, inside the extension
	if got := must(d.Claim(ctx, req))(t); len(got) != 0 {
		t.Fatalf("an extended claim must not be reclaimed: %+v", got)
	}
	clock.Advance(2 * time.Minute)
	if got := must(d.Claim(ctx, req))(t); len(got) != 1 {
		t.Fatalf("an expired claim must be reclaimable: %+v", got)
	}
}

func testDeadLetter(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	_, e := own(t, d, "a:1", "default/1")
	id := must(d.Enqueue(ctx, msg("default/1", "order", "1", "{}"), nil))(t).ID
	req := store.ClaimRequest{Owner: "a:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}
	must(d.Claim(ctx, req))(t)
	replyErr := errs.Encode(errs.New(errs.CodeDeadLettered, "gave up"))
	check(t, d.DeadLetter(ctx, store.Fence{Owner: "a:1", Epoch: e}, "default/1", id, "panic: nil map", replyErr))
	m := must(d.GetMessage(ctx, id))(t)
	if m.State != store.StateDead || m.LastError != "panic: nil map" {
		t.Fatalf("dead: %+v", m)
	}
	r := must(d.GetReply(ctx, id))(t)
	if r == nil || !errors.Is(errs.Decode(r.Error), errs.ErrDeadLettered) {
		t.Fatalf("dead reply: %+v", r)
	}
	dead := must(d.ListMessages(ctx, store.MessageFilter{State: store.StateDead}))(t)
	if len(dead) != 1 || dead[0].ID != id {
		t.Fatalf("list dead: %+v", dead)
	}
	if got := must(d.Claim(ctx, req))(t); len(got) != 0 {
		t.Fatalf("dead messages are not claimable: %+v", got)
	}
	check(t, d.ReplayDead(ctx, id))
	if r := must(d.GetReply(ctx, id))(t); r != nil {
		t.Fatalf("replay must drop the old reply: %+v", r)
	}
	got := must(d.Claim(ctx, req))(t)
	if len(got) != 1 || got[0].ID != id || got[0].Attempts != 1 {
		t.Fatalf("replayed message must be claimable afresh: %+v", got)
	}
	if err := d.ReplayDead(ctx, id); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("replaying a live message: want not_found, got %v", err)
	}
	all := must(d.ListMessages(ctx, store.MessageFilter{EntityType: "order", EntityID: "1", Limit: 5}))(t)
	if len(all) != 1 {
		t.Fatalf("list by entity: %+v", all)
	}
}

func testDelayed(t *testing.T, d store.Driver, clock *Clock) {
	ctx := ctxT(t)
	_, _ = own(t, d, "a:1", "default/1")
	m := msg("default/1", "order", "1", "{}")
	m.Delay = time.Hour
	id := must(d.Enqueue(ctx, m, nil))(t).ID
	req := store.ClaimRequest{Owner: "a:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}
	if got := must(d.Claim(ctx, req))(t); len(got) != 0 {
		t.Fatalf("not due yet: %+v", got)
	}
	wait, ok, err := d.NextDelivery(ctx, "a:1", []string{"order"})
	check(t, err)
	if !ok || wait <= 50*time.Minute || wait > time.Hour {
		t.Fatalf("next delivery: %v %v", wait, ok)
	}
	if _, ok, _ := d.NextDelivery(ctx, "a:1", []string{"other"}); ok {
		t.Fatalf("next delivery must respect types")
	}
	if _, ok, _ := d.NextDelivery(ctx, "b:1", []string{"order"}); ok {
		t.Fatalf("next delivery must respect shard ownership")
	}
	clock.Advance(wait - 10*time.Minute)
	if got := must(d.Claim(ctx, req))(t); len(got) != 0 {
		t.Fatalf("claimed ten minutes before its delivery time: %+v", got)
	}
	clock.Advance(10*time.Minute + time.Second)
	got := must(d.Claim(ctx, req))(t)
	if len(got) != 1 || got[0].ID != id {
		t.Fatalf("due now: %+v", got)
	}
	if _, ok, _ := d.NextDelivery(ctx, "a:1", []string{"order"}); ok {
		t.Fatalf("nothing pending in the future")
	}
}

func testEnqueueClaimed(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	_, e := own(t, d, "a:1", "default/1")
	r := must(d.Enqueue(ctx, msg("default/1", "order", "1", "{}"), &store.EnqueueClaim{Owner: "a:1", Epoch: e, ClaimTTL: time.Minute}))(t)
	if r.ClaimedEpoch != e {
		t.Fatalf("owner enqueue must come back claimed: %+v", r)
	}
	m := must(d.GetMessage(ctx, r.ID))(t)
	if m.State != store.StateClaimed || m.ClaimedBy != "a:1" || m.ClaimEpoch != e || m.Attempts != 1 {
		t.Fatalf("claimed at insert: %+v", m)
	}
	req := store.ClaimRequest{Owner: "a:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}
	if got := must(d.Claim(ctx, req))(t); len(got) != 0 {
		t.Fatalf("must not be claimed twice: %+v", got)
	}
	check(t, d.Complete(ctx, store.Completion{MessageID: r.ID, Shard: "default/1", Fence: store.Fence{Owner: "a:1", Epoch: e}}))
	// a stale epoch inserts pending instead
	r2 := must(d.Enqueue(ctx, msg("default/1", "order", "1", "{}"), &store.EnqueueClaim{Owner: "a:1", Epoch: e + 5, ClaimTTL: time.Minute}))(t)
	if r2.ClaimedEpoch != 0 {
		t.Fatalf("stale epoch must not claim: %+v", r2)
	}
	if m := must(d.GetMessage(ctx, r2.ID))(t); m.State != store.StatePending {
		t.Fatalf("stale-epoch enqueue state: %+v", m)
	}
	// a delayed message is never claimed at insert
	dm := msg("default/1", "order", "1", "{}")
	dm.Delay = time.Hour
	r3 := must(d.Enqueue(ctx, dm, &store.EnqueueClaim{Owner: "a:1", Epoch: e, ClaimTTL: time.Minute}))(t)
	if r3.ClaimedEpoch != 0 {
		t.Fatalf("delayed enqueue claimed: %+v", r3)
	}
}

func testDrainStats(t *testing.T, d store.Driver, clock *Clock) {
	ctx := ctxT(t)
	_, e := own(t, d, "a:1", "default/1")
	for i := 0; i < 3; i++ {
		must(d.Enqueue(ctx, msg("default/1", "order", "1", "{}"), nil))(t)
	}
	must(d.Enqueue(ctx, msg("default/2", "ghost", "1", "{}"), nil))(t)
	later := msg("default/1", "order", "1", "{}")
	later.Delay = time.Hour
	must(d.Enqueue(ctx, later, nil))(t)
	clock.Advance(2 * time.Second)
	got := must(d.Claim(ctx, store.ClaimRequest{Owner: "a:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 1, ClaimTTL: time.Minute}))(t)
	check(t, d.DeadLetter(ctx, store.Fence{Owner: "a:1", Epoch: e}, "default/1", got[0].ID, "x", nil))
	must(d.Claim(ctx, store.ClaimRequest{Owner: "a:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 1, ClaimTTL: time.Minute}))(t)
	st := must(d.DrainStats(ctx))(t)
	if st.Dead != 1 {
		t.Fatalf("dead count: %+v", st)
	}
	if st.OldestUndelivered < time.Second {
		t.Fatalf("oldest undelivered must be >= 1s: %v", st.OldestUndelivered)
	}
	byShard := map[string]store.ShardDrain{}
	for _, s := range st.Shards {
		byShard[s.Shard] = s
	}
	s1 := byShard["default/1"]
	if s1.Pending != 1 || s1.Claimed != 1 || s1.Dead != 1 || s1.Owner != "a:1" || s1.OldestDeliverable < time.Second {
		t.Fatalf("shard 1 drain: %+v", s1)
	}
	if s2 := byShard["default/2"]; s2.Pending != 1 || s2.Owner != "" {
		t.Fatalf("shard 2 drain: %+v", s2)
	}
	byType := map[string]store.TypeBacklog{}
	for _, tb := range st.Types {
		byType[tb.EntityType] = tb
	}
	if byType["ghost"].Pending != 1 || byType["order"].Pending != 1 || byType["ghost"].OldestDeliverable < time.Second {
		t.Fatalf("type backlog: %+v", st.Types)
	}
}
