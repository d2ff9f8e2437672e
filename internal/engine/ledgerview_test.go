package engine

// The wake-up's copy of the lock ledger: a copy that names no holder for a
// shard does not stand for later sends (the shard may have been taken since),
// a copy naming one does until ledgerTTL, and fresh asks again.

import (
	"context"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
)

func TestLedgerViewMissIsNotCached(t *testing.T) {
	ctx := context.Background()
	d := memory.New()
	var v ledgerView
	if h := v.owner(ctx, d, "s1", false); h != "" {
		t.Fatalf("no holder yet, got %q", h)
	}
	take := func(owner string) store.Locker {
		t.Helper()
		l, err := d.NewLocker(ctx, store.LockRow, owner)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := l.Acquire(ctx, "s1", time.Minute); err != nil || !ok {
			t.Fatalf("%s acquire: %v %v", owner, ok, err)
		}
		return l
	}
	a := take("10.0.0.1:34000")
	// Within ledgerTTL of the empty read: the holder is found all the same.
	if h := v.owner(ctx, d, "s1", false); h != "10.0.0.1:34000" {
		t.Fatalf("a shard taken after an empty read: %q, want its holder", h)
	}
	if err := a.Release(ctx, "s1", 1); err != nil {
		t.Fatal(err)
	}
	take("10.0.0.2:34000")
	// A copy naming a holder serves until ledgerTTL unless fresh is asked.
	if h := v.owner(ctx, d, "s1", false); h != "10.0.0.1:34000" {
		t.Fatalf("the copy naming a holder: %q, want it to serve", h)
	}
	if h := v.owner(ctx, d, "s1", true); h != "10.0.0.2:34000" {
		t.Fatalf("fresh after a refusal: %q, want the new holder", h)
	}
}
