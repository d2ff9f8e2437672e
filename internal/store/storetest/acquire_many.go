package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// runAcquireMany pins store.BatchLocker for stores whose lockers have
// it: one call takes every free shard at a new epoch, skips the ones
// another runner holds, and leaves the ledger as Acquire would; asking
// again for a held shard keeps it; ReleaseMany frees them all for others.
func runAcquireMany(t *testing.T, factory Factory, opts Options) {
	modes := opts.Modes
	if len(modes) == 0 {
		modes = []store.LockMode{store.LockRow, store.LockAdvisory}
	}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) { testAcquireMany(t, factory, opts, mode) })
	}
}

func testAcquireMany(t *testing.T, factory Factory, opts Options, mode store.LockMode) {
	ctx := ctxT(t)
	d, clock := open(t, factory)
	d2 := second(t, opts, d, clock)
	a := locker(t, d, mode, "a:1")
	b := locker(t, d2, mode, "b:1")
	ba := b
	// Nothing here waits for a lease to run out: the lease outlasts any
	// stall of a loaded machine between two statements (a 5 s one ran out
	// between b's batch and a's attempt, with the load at 45).
	const ttl = 10 * time.Minute
	e1, ok, err := a.Acquire(ctx, "default/1", ttl)
	check(t, err)
	if !ok {
		t.Fatal("a could not take a free shard")
	}
	// default/2 has an epoch already: b's batch must bump it.
	e2, ok, err := a.Acquire(ctx, "default/2", ttl)
	check(t, err)
	if !ok {
		t.Fatal("a could not take default/2")
	}
	check(t, a.Release(ctx, "default/2", e2))
	var shards []string
	for i := 1; i <= 250; i++ { // more than one statement's chunk
		shards = append(shards, fmt.Sprintf("default/%d", i))
	}
	got := must(ba.AcquireMany(ctx, shards, ttl))(t)
	if len(got) != 249 {
		t.Fatalf("b took %d of 250 shards, want 249 (default/1 is a's)", len(got))
	}
	if _, took := got["default/1"]; took {
		t.Fatal("b took a shard a holds")
	}
	if got["default/2"] <= e2 {
		t.Fatalf("default/2 taken at epoch %d, not above %d", got["default/2"], e2)
	}
	locks := must(d.ShardLocks(ctx))(t)
	ledger := map[string]store.ShardLock{}
	for _, l := range locks {
		ledger[l.Shard] = l
	}
	for sh, e := range got {
		if l := ledger[sh]; l.Owner != "b:1" || l.Epoch != e {
			t.Fatalf("ledger of %s: %+v, want b:1 at %d", sh, l, e)
		}
	}
	if l := ledger["default/1"]; l.Owner != "a:1" || l.Epoch != e1 {
		t.Fatalf("a's shard changed: %+v", l)
	}
	// a cannot take them now; b's refresh keeps them all.
	if _, ok, err := a.Acquire(ctx, "default/3", ttl); err != nil || ok {
		t.Fatalf("a took b's shard: %v %v", ok, err)
	}
	lost := must(b.Refresh(ctx, got, ttl))(t)
	if len(lost) != 0 {
		t.Fatalf("b lost %v right after taking them", lost)
	}
	// Asking again for what it holds keeps it (and its session lock once).
	again := must(ba.AcquireMany(ctx, []string{"default/3"}, ttl))(t)
	if again["default/3"] == 0 {
		t.Fatal("b could not re-take its own shard")
	}
	got["default/3"] = again["default/3"]
	check(t, ba.ReleaseMany(ctx, got))
	for _, sh := range shards[1:40] { // a sample; the ledger check below covers all
		e, ok, err := a.Acquire(ctx, sh, ttl)
		if err != nil || !ok {
			t.Fatalf("after b released %s, a could not take it: %v %v (a session lock taken twice, or not released?)", sh, ok, err)
		}
		if e <= got[sh] {
			t.Fatalf("%s retaken at epoch %d, not above %d", sh, e, got[sh])
		}
	}
	for _, l := range must(d.ShardLocks(ctx))(t) {
		if l.Owner == "b:1" {
			t.Fatalf("the ledger still names b after ReleaseMany: %+v", l)
		}
	}
}
