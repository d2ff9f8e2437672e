// Shard lock cases, per lock mode: acquire, refresh and release, the
// survey of real lock state, presence locks.

package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testwait"
)

func testLocks(t *testing.T, factory Factory, opts Options, mode store.LockMode) {
	ctx := ctxT(t)
	d, clock := open(t, factory)
	d2 := second(t, opts, d, clock)
	a := locker(t, d, mode, "a:1")
	b := locker(t, d2, mode, "b:1")
	if a.Mode() != mode {
		t.Fatalf("mode %s", a.Mode())
	}
	ttl := time.Minute // the clock moves; real time stays far inside it
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
	// Losing the holder: advisory locks go with the session, row leases
	// expire: refused while b's lease runs, taken once it has run out.
	if _, ok, err := a.Acquire(ctx, "default/1", ttl); err != nil || ok {
		t.Fatalf("a must not take b's live lease: ok=%v err=%v", ok, err)
	}
	if mode == store.LockAdvisory {
		check(t, b.Close())
	} else {
		clock.Advance(ttl / 2)
		if _, ok, err := a.Acquire(ctx, "default/1", ttl); err != nil || ok {
			t.Fatalf("a took b's lease before it expired: ok=%v err=%v", ok, err)
		}
		clock.Advance(ttl/2 + time.Second)
	}
	e3, ok, err := a.Acquire(ctx, "default/1", ttl)
	check(t, err)
	if !ok || e3 <= e2 {
		t.Fatalf("takeover after holder loss: ok=%v epoch=%d (was %d)", ok, e3, e2)
	}
	if mode == store.LockRow {
		// an unexpired lease is kept by refresh past its first ttl
		for i := 0; i < 3; i++ {
			clock.Advance(ttl / 2)
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
	testManyShards(ctx, t, a, ttl)
}

// testManyShards: a takes 50 shards at once and refreshes them together;
// a closed locker refreshes nothing.
func testManyShards(ctx context.Context, t *testing.T, a store.Locker, ttl time.Duration) {
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
	lost, err := a.Refresh(ctx, held, ttl)
	check(t, err)
	if len(lost) != 0 {
		t.Fatalf("lost %v", lost)
	}
	check(t, a.Close())
	if _, err := a.Refresh(ctx, held, ttl); err == nil {
		t.Fatalf("refresh on a closed locker must fail")
	}
}

func testSurvey(t *testing.T, factory Factory, opts Options, mode store.LockMode) {
	ctx := ctxT(t)
	d, clock := open(t, factory)
	d2 := second(t, opts, d, clock)
	a := locker(t, d, mode, "a:1")
	b := locker(t, d2, mode, "b:1")
	sv := b
	ttl := time.Minute // the clock moves; real time stays far inside it
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
		clock.Advance(ttl / 2)
		if got = survey(); got["default/2"].Free {
			t.Fatalf("a lease short of its ttl is not free: %+v", got["default/2"])
		}
		clock.Advance(ttl/2 + time.Second)
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
	d, clock := open(t, factory)
	d2 := second(t, opts, d, clock)
	a := must(d.NewLocker(ctx, mode, "a:1"))(t)
	defer a.Close()
	b := locker(t, d2, mode, "b:1")
	pp := b
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
	// The server drops a closed session's locks in its own time: wait.
	testwait.For(t, 5*time.Second, "a's closed locker to be absent", func() bool {
		return slices.Equal(absent("a:1", "b:1"), []string{"a:1"})
	})
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
