package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// wakePoll is the raised poll interval of TestWakeReachesTheLedgerHolder:
// only a wake-up delivers well before it.
const wakePoll = 30 * time.Second

// A sender whose view of the cluster is stale (its last listing is from
// before a handover) persists a message for a shard the new owner took
// since: the wake-up it sends to the runner its view names is refused (that
// runner holds the shard no more), the sender asks the ledger and wakes the
// holder, which delivers long before its (raised) poll. On PostgreSQL the
// store's NOTIFY wakes the owner whatever the sender's view.
func TestWakeReachesTheLedgerHolder(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) store.Driver
	}{
		{"memory", func(t *testing.T) store.Driver { return memory.New() }},
		{"mariadb", func(t *testing.T) store.Driver {
			s, err := mysql.Open(context.Background(), testdb.MariaDB(t, "engine_wake_ledger"), mysql.Options{Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
		{"postgres", func(t *testing.T) store.Driver {
			s, err := postgres.Open(context.Background(), testdb.Postgres(t, "engine_wake_ledger"), postgres.Options{Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { wakeStaleView(t, tc.open(t)) })
	}
}

func wakeStaleView(t *testing.T, d store.Driver) {
	var mu sync.Mutex
	got := map[string]time.Time{}
	handler := func(ctx context.Context, m store.Message) ([]byte, error) {
		mu.Lock()
		got[m.EntityID] = time.Now()
		mu.Unlock()
		return nil, nil
	}
	delivered := func(id string) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := got[id]
		return at, ok
	}
	cfg := func(name string) config.Config {
		c := clusterConfig(t, name)
		c.PollInterval = wakePoll
		return c
	}
	a := startEngine(t, d, cfg("a"))
	if err := a.Register("echo", handler, EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "a holds every shard", ownsAll(a))
	// The sender hosts nothing, and once its view names a its listings
	// fail: the view stays the one from before b joined (a runner lists the
	// cluster on every pass, a quarter second apart after a change).
	sc := cfg("s")
	sc.Heartbeat = time.Minute
	var held atomic.Bool
	s := startEngine(t, heldView{d, &held}, sc)
	shards := make([]string, 0, 30)
	for sh := range a.Runner().Held() {
		shards = append(shards, sh)
	}
	testwait.For(t, 10*time.Second, "the sender's view names a for every shard", func() bool {
		for _, sh := range shards {
			if s.Runner().Owner(sh) != a.Address() {
				return false
			}
		}
		return true
	})
	held.Store(true)
	b := startEngine(t, d, cfg("b"))
	if err := b.Register("echo", handler, EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	// Settled: a and b agree who owns what and hold it, so no later
	// acquisition makes b read its shards again.
	shard := staleShard(t, a, b, s)
	ids := entitiesOn(t, b, shard, 2)
	// b reads the shard once (its own send wakes it in process): its next
	// read is a wake-up or the poll.
	ctx := context.Background()
	if _, err := b.Send(ctx, Message{EntityType: "echo", EntityID: ids[0], Payload: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "b's own message", func() bool { _, ok := delivered(ids[0]); return ok })
	sent := time.Now()
	if _, err := s.Send(ctx, Message{EntityType: "echo", EntityID: ids[1], Payload: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wakePoll/3, "the stale sender's message delivered before b's poll", func() bool { _, ok := delivered(ids[1]); return ok })
	at, _ := delivered(ids[1])
	t.Logf("delivered %v after the send (poll interval %v)", at.Sub(sent).Round(time.Millisecond), wakePoll)
}

// entitiesOn returns n entity ids of type echo that hash to shard.
func entitiesOn(t *testing.T, e *Engine, shard string, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; len(ids) < n && i < 100000; i++ {
		if id := fmt.Sprintf("w%d", i); e.ShardOf("echo", id, "") == shard {
			ids = append(ids, id)
		}
	}
	if len(ids) < n {
		t.Fatalf("no %d entities on %s", n, shard)
	}
	return ids
}

// heldView fails a runner's listings of the cluster while held is set:
// the runner keeps the view of its last listing.
type heldView struct {
	store.Driver
	held *atomic.Bool
}

func (v heldView) ListRunners(ctx context.Context) ([]store.Runner, error) {
	if v.held.Load() {
		return nil, errs.New(errs.CodeUnavailable, "test: this runner's listings are held")
	}
	return v.Driver.ListRunners(ctx)
}

// unlisted holds a runner's cluster listing until released: an instance
// that has just booted and has no view of the cluster yet.
type unlisted struct {
	store.Driver
	gate chan struct{}
}

func (u unlisted) ListRunners(ctx context.Context) ([]store.Runner, error) {
	select {
	case <-u.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return u.Driver.ListRunners(ctx)
}

// An instance sends before its first listing of the cluster (right after
// boot): its view names no owner, and the holder the ledger names is woken.
func TestWakeBeforeTheFirstListing(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) store.Driver
	}{
		{"memory", func(t *testing.T) store.Driver { return memory.New() }},
		{"mariadb", func(t *testing.T) store.Driver {
			s, err := mysql.Open(context.Background(), testdb.MariaDB(t, "engine_wake_boot"), mysql.Options{Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { wakeAtBoot(t, tc.open(t)) })
	}
}

func wakeAtBoot(t *testing.T, d store.Driver) {
	got := make(chan string, 4)
	handler := func(ctx context.Context, m store.Message) ([]byte, error) {
		got <- m.EntityID
		return nil, nil
	}
	ac := clusterConfig(t, "a")
	ac.PollInterval = wakePoll
	a := startEngine(t, d, ac)
	if err := a.Register("echo", handler, EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "a holds every shard", ownsAll(a))
	var shard string
	for sh := range a.Runner().Held() {
		shard = sh
		break
	}
	ids := entitiesOn(t, a, shard, 2)
	ctx := context.Background()
	// a reads the shard once (its own send): its next read is a wake-up or
	// the poll.
	if _, err := a.Send(ctx, Message{EntityType: "echo", EntityID: ids[0], Payload: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if id := <-got; id != ids[0] {
		t.Fatalf("delivered %s", id)
	}
	sc := clusterConfig(t, "s")
	sc.PollInterval = wakePoll
	gate := make(chan struct{})
	s := startEngine(t, unlisted{d, gate}, sc)
	t.Cleanup(func() { close(gate) }) // before s closes
	if o := s.Runner().Owner(shard); o != "" {
		t.Fatalf("the sender has a view (%q for %s): the test tests nothing", o, shard)
	}
	sent := time.Now()
	if _, err := s.Send(ctx, Message{EntityType: "echo", EntityID: ids[1], Payload: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		if id != ids[1] {
			t.Fatalf("delivered %s", id)
		}
		t.Logf("delivered %v after the send (poll interval %v)", time.Since(sent).Round(time.Millisecond), wakePoll)
	case <-time.After(wakePoll / 3):
		t.Fatalf("not delivered within %v: the wake-up did not reach the holder", wakePoll/3)
	}
}
