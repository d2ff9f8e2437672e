package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// Factory returns a migrated store with no rows. It may be called several
// times in one test (two handles on one database) via Options.Reopen.
type Factory func(t *testing.T) store.Driver

// Options tune the suite to a store.
type Options struct {
	// Reopen returns a second handle on the same database as the last
	// Factory call (a second process, in effect). Nil for memory, where the
	// same *Store is shared.
	Reopen func(t *testing.T) store.Driver
	// Modes lists the lock modes to exercise (resolved modes only).
	Modes []store.LockMode
}

// Run runs the whole suite.
func Run(t *testing.T, factory Factory, opts Options) {
	if len(opts.Modes) == 0 {
		opts.Modes = []store.LockMode{store.LockRow, store.LockAdvisory}
	}
	t.Run("ClusterConfig", func(t *testing.T) { testClusterConfig(t, factory(t)) })
	t.Run("ClusterSecret", func(t *testing.T) { testClusterSecret(t, factory, opts) })
	t.Run("Runners", func(t *testing.T) { testRunners(t, factory(t)) })
	for _, mode := range opts.Modes {
		t.Run("Locks/"+string(mode), func(t *testing.T) { testLocks(t, factory, opts, mode) })
	}
	for _, mode := range opts.Modes {
		t.Run("Survey/"+string(mode), func(t *testing.T) { testSurvey(t, factory, opts, mode) })
	}
	for _, mode := range opts.Modes {
		t.Run("Presence/"+string(mode), func(t *testing.T) { testPresence(t, factory, opts, mode) })
	}
	t.Run("EnqueueDedupe", func(t *testing.T) { testEnqueueDedupe(t, factory(t)) })
	t.Run("ClaimRules", func(t *testing.T) { testClaimRules(t, factory(t)) })
	t.Run("ClaimConcurrent", func(t *testing.T) { testClaimConcurrent(t, factory, opts) })
	t.Run("Fencing", func(t *testing.T) { testFencing(t, factory(t)) })
	t.Run("ReleaseAndAttempts", func(t *testing.T) { testReleaseAndAttempts(t, factory(t)) })
	t.Run("DeadLetter", func(t *testing.T) { testDeadLetter(t, factory(t)) })
	t.Run("Delayed", func(t *testing.T) { testDelayed(t, factory(t)) })
	t.Run("EnqueueClaimed", func(t *testing.T) { testEnqueueClaimed(t, factory(t)) })
	t.Run("DrainStats", func(t *testing.T) { testDrainStats(t, factory(t)) })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// must turns a (value, error) pair into the value, failing t on error:
// must(d.Claim(ctx, req))(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func locker(t *testing.T, d store.Driver, mode store.LockMode, owner string) store.Locker {
	t.Helper()
	l := must(d.NewLocker(ctxT(t), mode, owner))(t)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// own takes shard for owner in advisory mode and returns the locker+epoch.
func own(t *testing.T, d store.Driver, owner, shard string) (store.Locker, int64) {
	t.Helper()
	mode, _, err := d.ResolveLockMode(ctxT(t), store.LockAuto)
	check(t, err)
	l := locker(t, d, mode, owner)
	epoch, ok, err := l.Acquire(ctxT(t), shard, time.Minute)
	check(t, err)
	if !ok || epoch <= 0 {
		t.Fatalf("acquire %s for %s: ok=%v epoch=%d", shard, owner, ok, epoch)
	}
	return l, epoch
}

func msg(shard, typ, id string, payload string) *store.Message {
	return &store.Message{Shard: shard, EntityType: typ, EntityID: id, Tag: "t", Payload: []byte(payload), Headers: map[string]string{"h": "v"}}
}

func testClusterConfig(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	got := must(d.EnsureClusterConfig(ctx, store.ClusterConfig{ShardCount: 300, Groups: []string{"default", "b"}}))(t)
	if got.ShardCount != 300 || !slices.Equal(got.Groups, []string{"default", "b"}) {
		t.Fatalf("first ensure returned %+v", got)
	}
	got = must(d.EnsureClusterConfig(ctx, store.ClusterConfig{ShardCount: 16, Groups: []string{"x"}}))(t)
	if got.ShardCount != 300 || !slices.Equal(got.Groups, []string{"default", "b"}) {
		t.Fatalf("second ensure must return the stored row, got %+v", got)
	}
	check(t, d.Ping(ctx))
	if _, err := d.Now(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.ResolveLockMode(ctx, "bogus"); !errors.Is(err, errs.ErrInvalidConfig) {
		t.Fatalf("unknown lock mode: want invalid_config, got %v", err)
	}
}

// testClusterSecret: the first writer wins, later and concurrent callers
// (other handles: other processes) get the stored secret.
func testClusterSecret(t *testing.T, factory Factory, opts Options) {
	ctx := ctxT(t)
	d := factory(t)
	handles := []store.Driver{d, d}
	if opts.Reopen != nil {
		handles = append(handles, opts.Reopen(t), opts.Reopen(t))
	}
	got := make([]string, len(handles))
	var wg sync.WaitGroup
	errc := make(chan error, len(handles))
	for i, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := h.EnsureClusterSecret(ctx, fmt.Sprintf("candidate-%d-%064d", i, i))
			got[i] = s
			errc <- err
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		check(t, err)
	}
	if !strings.HasPrefix(got[0], "candidate-") || len(got[0]) != len("candidate-0-")+64 {
		t.Fatalf("stored secret %q is none of the candidates", got[0])
	}
	for i, s := range got {
		if s != got[0] {
			t.Fatalf("handle %d got secret %q, handle 0 %q: concurrent first boots disagree", i, s, got[0])
		}
	}
	if s := must(d.EnsureClusterSecret(ctx, "late"))(t); s != got[0] {
		t.Fatalf("a later candidate replaced the stored secret: %q", s)
	}
}

func testRunners(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	r := store.Runner{Address: "10.0.0.1:34000", ReplicaID: "pod-a", Groups: []string{"default"}, EntityTypes: []string{"a", "b"}, InspectAddr: "127.0.0.1:9000", Version: "v1", Healthy: true, Meta: `{"k":1}`}
	check(t, d.RegisterRunner(ctx, r))
	r.EntityTypes = []string{"a", "b", "c"}
	check(t, d.RegisterRunner(ctx, r)) // upsert by address
	check(t, d.RegisterRunner(ctx, store.Runner{Address: "10.0.0.2:34000", ReplicaID: "pod-b", Healthy: true}))
	rs := must(d.ListRunners(ctx))(t)
	if len(rs) != 2 || rs[0].Address != "10.0.0.1:34000" || rs[1].Address != "10.0.0.2:34000" {
		t.Fatalf("runners: %+v", rs)
	}
	if !slices.Equal(rs[0].EntityTypes, []string{"a", "b", "c"}) || rs[0].ReplicaID != "pod-a" || rs[0].InspectAddr != "127.0.0.1:9000" || rs[0].Meta != `{"k":1}` || !rs[0].Healthy {
		t.Fatalf("runner fields not kept: %+v", rs[0])
	}
	if rs[0].HeartbeatAge < -time.Second || rs[0].HeartbeatAge > 5*time.Second {
		t.Fatalf("heartbeat age by the store clock should be ~0, got %v", rs[0].HeartbeatAge)
	}
	mode, _, err := d.ResolveLockMode(ctx, store.LockAuto)
	check(t, err)
	l := locker(t, d, mode, r.Address)
	time.Sleep(1100 * time.Millisecond)
	check(t, l.Heartbeat(ctx, r.Address))
	rs = must(d.ListRunners(ctx))(t)
	if rs[0].HeartbeatAge > 500*time.Millisecond || rs[1].HeartbeatAge < time.Second {
		t.Fatalf("heartbeat did not move only runner a: %v %v", rs[0].HeartbeatAge, rs[1].HeartbeatAge)
	}
	check(t, d.DeleteRunner(ctx, "10.0.0.2:34000"))
	if err := l.Heartbeat(ctx, "10.0.0.2:34000"); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("heartbeat of a deleted runner: want not_found, got %v", err)
	}
	if rs = must(d.ListRunners(ctx))(t); len(rs) != 1 {
		t.Fatalf("after delete: %+v", rs)
	}
}

func testLocks(t *testing.T, factory Factory, opts Options, mode store.LockMode) {
	ctx := ctxT(t)
	d := factory(t)
	d2 := d
	if opts.Reopen != nil {
		d2 = opts.Reopen(t)
	}
	a := locker(t, d, mode, "a:1")
	b := locker(t, d2, mode, "b:1")
	if a.Mode() != mode {
		t.Fatalf("mode %s", a.Mode())
	}
	ttl := 2 * time.Second
	e1, ok, err := a.Acquire(ctx, "default/1", ttl)
	check(t, err)
	if !ok || e1 <= 0 {
		t.Fatalf("a acquire: ok=%v epoch=%d", ok, e1)
	}
	if _, ok, err := b.Acquire(ctx, "default/1", ttl); err != nil || ok {
		t.Fatalf("b must not take a held shard: ok=%v err=%v", ok, err)
	}
	ls := must(d.ShardLocks(ctx))(t)
	if len(ls) != 1 || ls[0].Owner != "a:1" || ls[0].Epoch != e1 {
		t.Fatalf("ledger: %+v", ls)
	}
	lost, err := a.Refresh(ctx, map[string]int64{"default/1": e1}, ttl)
	check(t, err)
	if len(lost) != 0 {
		t.Fatalf("refresh lost %v", lost)
	}
	check(t, a.Release(ctx, "default/1", e1))
	e2, ok, err := b.Acquire(ctx, "default/1", ttl)
	check(t, err)
	if !ok || e2 <= e1 {
		t.Fatalf("b after release: ok=%v epoch=%d (was %d): every acquisition bumps the epoch", ok, e2, e1)
	}
	lost, err = a.Refresh(ctx, map[string]int64{"default/1": e1}, ttl)
	check(t, err)
	if !slices.Equal(lost, []string{"default/1"}) {
		t.Fatalf("a must see default/1 lost, got %v", lost)
	}
	// Losing the holder: advisory locks go with the session, row leases expire.
	if mode == store.LockAdvisory {
		check(t, b.Close())
	} else {
		time.Sleep(ttl + 300*time.Millisecond)
	}
	e3, ok, err := a.Acquire(ctx, "default/1", ttl)
	check(t, err)
	if !ok || e3 <= e2 {
		t.Fatalf("takeover after holder loss: ok=%v epoch=%d (was %d)", ok, e3, e2)
	}
	if mode == store.LockRow {
		// an unexpired lease is kept by refresh past its first ttl
		for i := 0; i < 3; i++ {
			time.Sleep(ttl / 2)
			lost, err = a.Refresh(ctx, map[string]int64{"default/1": e3}, ttl)
			check(t, err)
			if len(lost) != 0 {
				t.Fatalf("refreshed lease lost: %v", lost)
			}
		}
		if _, ok, err := b.Acquire(ctx, "default/1", ttl); err != nil || ok {
			t.Fatalf("b took a refreshed lease: ok=%v err=%v", ok, err)
		}
	}
	// Many shards at once.
	held := map[string]int64{}
	for i := 0; i < 50; i++ {
		sh := fmt.Sprintf("g/%d", i)
		e, ok, err := a.Acquire(ctx, sh, ttl)
		check(t, err)
		if !ok {
			t.Fatalf("acquire %s", sh)
		}
		held[sh] = e
	}
	lost, err = a.Refresh(ctx, held, ttl)
	check(t, err)
	if len(lost) != 0 {
		t.Fatalf("lost %v", lost)
	}
	check(t, a.Close())
	if _, err := a.Refresh(ctx, held, ttl); err == nil {
		t.Fatalf("refresh on a closed locker must fail")
	}
}

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
	d := factory(t)
	d2 := d
	if opts.Reopen != nil {
		d2 = opts.Reopen(t)
	}
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

func testReleaseAndAttempts(t *testing.T, d store.Driver) {
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
	// expired claims are void: a short claim ttl lets the owner reclaim
	check(t, d.Release(ctx, f, []int64{id}))
	req.ClaimTTL = time.Second
	must(d.Claim(ctx, req))(t)
	if got := must(d.Claim(ctx, req))(t); len(got) != 0 {
		t.Fatalf("a live claim must not be reclaimed: %+v", got)
	}
	check(t, d.ExtendClaims(ctx, "a:1", 3*time.Second))
	time.Sleep(1500 * time.Millisecond)
	if got := must(d.Claim(ctx, req))(t); len(got) != 0 {
		t.Fatalf("an extended claim must not be reclaimed: %+v", got)
	}
	time.Sleep(2 * time.Second)
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

func testDelayed(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	_, _ = own(t, d, "a:1", "default/1")
	m := msg("default/1", "order", "1", "{}")
	m.Delay = 1500 * time.Millisecond
	id := must(d.Enqueue(ctx, m, nil))(t).ID
	req := store.ClaimRequest{Owner: "a:1", Types: []string{"order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}
	if got := must(d.Claim(ctx, req))(t); len(got) != 0 {
		t.Fatalf("not due yet: %+v", got)
	}
	wait, ok, err := d.NextDelivery(ctx, "a:1", []string{"order"})
	check(t, err)
	if !ok || wait <= 500*time.Millisecond || wait > 1600*time.Millisecond {
		t.Fatalf("next delivery: %v %v", wait, ok)
	}
	if _, ok, _ := d.NextDelivery(ctx, "a:1", []string{"other"}); ok {
		t.Fatalf("next delivery must respect types")
	}
	if _, ok, _ := d.NextDelivery(ctx, "b:1", []string{"order"}); ok {
		t.Fatalf("next delivery must respect shard ownership")
	}
	time.Sleep(wait + 50*time.Millisecond)
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

func testDrainStats(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	_, e := own(t, d, "a:1", "default/1")
	for i := 0; i < 3; i++ {
		must(d.Enqueue(ctx, msg("default/1", "order", "1", "{}"), nil))(t)
	}
	must(d.Enqueue(ctx, msg("default/2", "ghost", "1", "{}"), nil))(t)
	later := msg("default/1", "order", "1", "{}")
	later.Delay = time.Hour
	must(d.Enqueue(ctx, later, nil))(t)
	time.Sleep(1100 * time.Millisecond)
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

func testSurvey(t *testing.T, factory Factory, opts Options, mode store.LockMode) {
	ctx := ctxT(t)
	d := factory(t)
	d2 := d
	if opts.Reopen != nil {
		d2 = opts.Reopen(t)
	}
	a := locker(t, d, mode, "a:1")
	b := locker(t, d2, mode, "b:1")
	sv, ok := b.(store.ShardSurveyor)
	if !ok {
		t.Skip("this store's locker does not survey; runners fall back to the ledger and heartbeats")
	}
	ttl := 2 * time.Second
	e1, _, err := a.Acquire(ctx, "default/1", ttl)
	check(t, err)
	_, _, err = a.Acquire(ctx, "default/2", ttl)
	check(t, err)
	survey := func() map[string]store.ShardState {
		t.Helper()
		st := must(sv.Survey(ctx, []string{"default/1", "default/2", "default/3"}))(t)
		if len(st) != 3 {
			t.Fatalf("survey returned %d rows for 3 shards", len(st))
		}
		out := map[string]store.ShardState{}
		for _, s := range st {
			out[s.Shard] = s
		}
		return out
	}
	got := survey()
	if got["default/1"].Free || got["default/1"].Owner != "a:1" || got["default/1"].Epoch != e1 || got["default/2"].Free {
		t.Fatalf("held shards must show their owner and not be free: %+v", got)
	}
	if !got["default/3"].Free || got["default/3"].Owner != "" {
		t.Fatalf("an untouched shard is free with no owner: %+v", got["default/3"])
	}
	check(t, a.Release(ctx, "default/1", e1))
	got = survey()
	if !got["default/1"].Free || got["default/1"].Owner != "" {
		t.Fatalf("a released shard is free with no owner: %+v", got["default/1"])
	}
	if mode == store.LockRow {
		time.Sleep(ttl + 300*time.Millisecond)
		got = survey()
		if !got["default/2"].Free || got["default/2"].Owner != "a:1" {
			t.Fatalf("an expired lease is free and still names its owner: %+v", got["default/2"])
		}
	}
}

// testPresence: an advisory locker holds its runner's presence from
// NewLocker to Close; another process sees it, and sees it go. Row mode has
// no session to probe and reports nobody absent.
func testPresence(t *testing.T, factory Factory, opts Options, mode store.LockMode) {
	ctx := ctxT(t)
	d := factory(t)
	d2 := d
	if opts.Reopen != nil {
		d2 = opts.Reopen(t)
	}
	a := must(d.NewLocker(ctx, mode, "a:1"))(t)
	defer a.Close()
	b := locker(t, d2, mode, "b:1")
	pp, ok := b.(store.PresenceProber)
	if !ok {
		t.Skip("this store's lockers hold no presence lock; runners rely on the unclaimed-proposal grace period")
	}
	absent := func(runners ...string) []string {
		t.Helper()
		got := must(pp.Absent(ctx, runners))(t)
		slices.Sort(got)
		return got
	}
	if mode == store.LockRow {
		if got := absent("a:1", "never:1"); len(got) != 0 {
			t.Fatalf("row mode has no presence to probe, Absent said %v", got)
		}
		return
	}
	if got := absent("a:1", "b:1", "never:1"); !slices.Equal(got, []string{"never:1"}) {
		t.Fatalf("with a and b open, Absent = %v, want [never:1]", got)
	}
	// Holding and releasing a shard leaves the presence alone.
	e, ok, err := a.Acquire(ctx, "default/7", time.Second)
	check(t, err)
	if !ok {
		t.Fatal("a could not take a free shard")
	}
	check(t, a.Release(ctx, "default/7", e))
	if got := absent("a:1"); len(got) != 0 {
		t.Fatalf("a released a shard, not its presence; Absent = %v", got)
	}
	check(t, a.Close())
	deadline := time.Now().Add(5 * time.Second)
	for got := absent("a:1", "b:1"); !slices.Equal(got, []string{"a:1"}); got = absent("a:1", "b:1") {
		if time.Now().After(deadline) {
			t.Fatalf("a's locker is closed; Absent = %v, want [a:1]", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A new locker of the same runner (a restart) is present again.
	a2 := must(d.NewLocker(ctx, mode, "a:1"))(t)
	defer a2.Close()
	if got := absent("a:1"); len(got) != 0 {
		t.Fatalf("a restarted; Absent = %v", got)
	}
	// A locker that opened while an earlier session of its runner still
	// held the presence takes it over on its next heartbeat.
	check(t, d.RegisterRunner(ctx, store.Runner{Address: "a:1", ReplicaID: "a", Groups: []string{"default"}}))
	a3 := locker(t, d, mode, "a:1")
	check(t, a2.Close())
	if got := absent("a:1"); !slices.Equal(got, []string{"a:1"}) {
		t.Fatalf("a's present session closed before a3's heartbeat; Absent = %v", got)
	}
	check(t, a3.Heartbeat(ctx, "a:1"))
	if got := absent("a:1"); len(got) != 0 {
		t.Fatalf("a3 heartbeat: it holds a's presence now; Absent = %v", got)
	}
}
