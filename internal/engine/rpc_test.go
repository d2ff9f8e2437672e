package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

// An attacker on loopback calls a runner's port directly: forged calls
// are refused and counted, nothing runs; a signed call is still held to
// the shards the runner holds and to the shard the entity hashes to; a
// type that takes only stored messages refuses volatile ones.
func TestRunnerPortRefusesForgedAndMisdirectedCalls(t *testing.T) {
	d := memory.New()
	var ran atomic.Int64
	handler := func(ctx context.Context, m store.Message) ([]byte, error) {
		ran.Add(1)
		return []byte("paid"), nil
	}
	cfgA, cfgB := clusterConfig(t, "a"), clusterConfig(t, "b")
	cfgA.ClusterSecret, cfgB.ClusterSecret = "", "" // the generated, stored secret
	a, b := startEngine(t, d, cfgA), startEngine(t, d, cfgB)
	for _, e := range []*Engine{a, b} {
		if err := e.Register("payments", handler, EntityOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := e.Register("workflow/pay", handler, EntityOptions{StoreOnly: true}); err != nil {
			t.Fatal(err)
		}
	}
	// Settled, not merely shared out: a shard a holds while handing it to b
	// would be refused below for the legitimate call.
	testwait.For(t, 10*time.Second, "the shards shared out", settled(a, b))
	if a.secrets[0] != b.secrets[0] || len(a.secrets[0]) != 64 {
		t.Fatalf("instances disagree on the stored secret or it is not 32 random bytes: %q %q", a.secrets[0], b.secrets[0])
	}
	ctx := context.Background()
	// An entity whose shard a holds.
	var id, shard string
	for i := 0; ; i++ {
		id = "p" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if shard = a.ShardOf("payments", id, ""); a.deliv.Epoch(shard) > 0 {
			break
		}
	}
	// Legitimate: b reaches a's entity through a's runner port.
	if out, err := b.Volatile(ctx, Message{EntityType: "payments", EntityID: id, Payload: []byte(`{"amount":1}`)}); err != nil || string(out) != "paid" {
		t.Fatalf("peer volatile: %q %v", out, err)
	}
	ran.Store(0)
	req := rpc.VolatileRequest{Shard: shard, EntityType: "payments", EntityID: id, Payload: []byte(`{"amount":999999}`)}
	for _, secret := range []string{"derived:memory:", "test-secret", ""} {
		if _, err := rpc.NewClient(secret, "attacker:1").Volatile(ctx, a.Address(), req); !errors.Is(err, errs.ErrUnauthenticated) {
			t.Fatalf("forged with %q: %v", secret, err)
		}
	}
	if a.RPCRefused() != 3 {
		t.Fatalf("refusals counted: %d", a.RPCRefused())
	}
	// Signed (an insider or a confused peer), but misdirected.
	peer := rpc.NewClient(a.secrets[0], "attacker:1")
	var other string // a shard b holds
	for s := range b.Runner().Held() {
		other = s
		break
	}
	for name, r := range map[string]rpc.VolatileRequest{
		"a shard it does not hold":         {Shard: other, EntityType: "payments", EntityID: id},
		"the wrong shard for the entity":   {Shard: other, EntityType: "payments", EntityID: id + "x"},
		"a workflow's timer":               {Shard: a.ShardOf("workflow/pay", id, ""), EntityType: "workflow/pay", EntityID: id, Tag: "timer"},
		"an entity type it does not serve": {Shard: shard, EntityType: "nope", EntityID: id},
	} {
		if name == "a workflow's timer" && a.deliv.Epoch(r.Shard) == 0 {
			continue
		}
		if _, err := peer.Volatile(ctx, a.Address(), r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// The wrong shard named for an entity a holds is refused too.
	if _, err := peer.Volatile(ctx, a.Address(), rpc.VolatileRequest{Shard: other, EntityType: "payments", EntityID: id}); !errors.Is(err, errs.ErrNotOwner) {
		t.Fatalf("misnamed shard: %v", err)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("a refused call ran the handler %d times", n)
	}
	// A workflow type never takes a volatile message, even locally.
	if _, err := a.deliv.Volatile(ctx, store.Message{Shard: a.ShardOf("workflow/pay", id, ""), EntityType: "workflow/pay", EntityID: id, Tag: "timer"}); err == nil {
		t.Fatal("a store-only type took a volatile message")
	}
}
