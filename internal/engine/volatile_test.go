package engine

// Volatile messages from a sender whose view of the cluster is stale or
// empty: the ledger names the holder.

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

// A volatile message is not persisted, so a sender that names the wrong
// runner has no poll to fall back on: a refusal (the runner its view names
// handed the shard over since), or no view at all (before its first
// listing), is followed by asking the lock ledger, and the holder runs it.
func TestVolatileReachesTheLedgerHolder(t *testing.T) {
	d := memory.New()
	handler := func(ctx context.Context, m store.Message) ([]byte, error) {
		return append([]byte("ran:"), m.Payload...), nil
	}
	// A handler whose own error is NotOwner (say, from a call it makes)
	// ran: that error goes back to the sender, and it is not sent on.
	var nestedRuns atomic.Int64
	nested := func(ctx context.Context, m store.Message) ([]byte, error) {
		nestedRuns.Add(1)
		return nil, errs.New(errs.CodeNotOwner, "a call the handler made was refused")
	}
	a := startEngine(t, d, clusterConfig(t, "a"))
	if err := a.Register("echo", handler, EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Register("nested", nested, EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "a holds every shard", ownsAll(a))
	// A sender that hosts nothing, whose listings fail once its view names
	// a: the view stays the one from before b joined.
	sc := clusterConfig(t, "s")
	sc.Heartbeat = time.Minute
	var held atomic.Bool
	s := startEngine(t, heldView{d, &held}, sc)
	testwait.For(t, 10*time.Second, "the sender's view names a", func() bool {
		for sh := range a.Runner().Held() {
			if s.Runner().Owner(sh) != a.Address() {
				return false
			}
		}
		return true
	})
	held.Store(true)
	b := startEngine(t, d, clusterConfig(t, "b"))
	if err := b.Register("echo", handler, EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Register("nested", nested, EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	shard := staleShard(t, a, b, s)
	id := entitiesOn(t, b, shard, 1)[0]
	ctx := context.Background()
	// a refuses (it holds the shard no more) before anything runs.
	if _, err := s.client.Volatile(ctx, a.Address(), rpc.VolatileRequest{Shard: shard, EntityType: "echo", EntityID: id, Payload: []byte("x")}); !errors.Is(err, errs.ErrNotOwner) {
		t.Fatalf("a took a message for a shard it handed over: %v", err)
	}
	if out, err := s.Volatile(ctx, Message{EntityType: "echo", EntityID: id, Payload: []byte("stale")}); err != nil || string(out) != "ran:stale" {
		t.Fatalf("stale view: %q %v", out, err)
	}
	var nid string
	for i := 0; nid == ""; i++ {
		if x := "n" + strconv.Itoa(i); b.ShardOf("nested", x, "") == shard {
			nid = x
		}
	}
	// From a, whose view names b rightly: b's handler's error comes back
	// as it was, not taken for b's refusal.
	if _, err := a.Volatile(ctx, Message{EntityType: "nested", EntityID: nid}); !errors.Is(err, errs.ErrNotOwner) || errors.Is(err, errs.ErrUnavailable) || nestedRuns.Load() != 1 {
		t.Fatalf("a handler's own NotOwner: %v, run %d times (want once)", err, nestedRuns.Load())
	}

	// Before its first listing a sender names nobody.
	gate := make(chan struct{})
	u := startEngine(t, unlisted{d, gate}, clusterConfig(t, "u"))
	t.Cleanup(func() { close(gate) }) // before u closes
	if o := u.Runner().Owner(shard); o != "" {
		t.Fatalf("the sender has a view (%q for %s): the test tests nothing", o, shard)
	}
	if out, err := u.Volatile(ctx, Message{EntityType: "echo", EntityID: id, Payload: []byte("boot")}); err != nil || string(out) != "ran:boot" {
		t.Fatalf("no view: %q %v", out, err)
	}
}
