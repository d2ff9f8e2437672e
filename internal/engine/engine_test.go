package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/delivery"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// clusterConfig is a clustered config on a shared memory store: the same
// code paths as a SQL cluster, in one process.
func clusterConfig(t *testing.T, name string) config.Config {
	cfg, err := config.FromEnv(func(string) string { return "" }, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	cfg.RunnerStorage = config.RunnerStorageSQL
	cfg.RunnerHost, cfg.RunnerPort = "127.0.0.1", freePort(t)
	cfg.ReplicaID = name
	cfg.Heartbeat = 200 * time.Millisecond
	cfg.PollInterval = 100 * time.Millisecond
	cfg.ShardCount = 30
	cfg.ClusterSecret = "test-secret"
	cfg.Warnings = nil
	return cfg
}

func startEngine(t *testing.T, d store.Driver, cfg config.Config) *Engine {
	t.Helper()
	ctx := context.Background()
	e, err := New(ctx, Options{Config: cfg, Store: d, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e
}

func echo(ctx context.Context, m store.Message) ([]byte, error) {
	return append([]byte("echo:"), m.Payload...), nil
}

func ownsAll(es ...*Engine) func() bool {
	return func() bool {
		n := 0
		for _, e := range es {
			n += len(e.Runner().Held())
		}
		return n == 30
	}
}

// settled reports whether es hold every shard between them and agree who
// owns each, each holding what it names itself for: no handover is under
// way, so no shard moves until the membership changes.
func settled(es ...*Engine) func() bool {
	return func() bool {
		if !ownsAll(es...)() {
			return false
		}
		var shards []string
		for _, e := range es {
			held := e.Runner().Held()
			if len(held) == 0 {
				return false
			}
			for sh := range held {
				shards = append(shards, sh)
			}
		}
		for _, sh := range shards {
			o := es[0].Runner().Owner(sh)
			for _, e := range es {
				if e.Runner().Owner(sh) != o || (o == e.Address()) != (e.deliv.Epoch(sh) > 0) {
					return false
				}
			}
		}
		return true
	}
}

// staleShard waits until a and b settle and returns a shard b holds, for
// which sender s (whose view dates from before b joined) still names a.
func staleShard(t *testing.T, a, b, s *Engine) string {
	t.Helper()
	testwait.For(t, 20*time.Second, "a and b settled", settled(a, b))
	var shard string
	for sh := range b.Runner().Held() {
		shard = sh
		break
	}
	if o := s.Runner().Owner(shard); o != a.Address() {
		t.Fatalf("the sender's view is not stale (names %q for %s): the test tests nothing", o, shard)
	}
	return shard
}

func TestRequestReplyDedupeAndErrors(t *testing.T) {
	d := memory.New()
	e := startEngine(t, d, clusterConfig(t, "a"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var calls atomic.Int64
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(e.Register("echo", func(ctx context.Context, m store.Message) ([]byte, error) {
		calls.Add(1)
		return echo(ctx, m)
	}, EntityOptions{}))
	testwait.For(t, 5*time.Second, "shards", ownsAll(e))

	r, err := e.Request(ctx, Message{EntityType: "echo", EntityID: "1", Payload: []byte("hi"), DedupeKey: "k"})
	check(err)
	if string(r.Payload) != "echo:hi" {
		t.Fatalf("reply %q", r.Payload)
	}
	r, err = e.Request(ctx, Message{EntityType: "echo", EntityID: "1", Payload: []byte("other"), DedupeKey: "k"})
	check(err)
	if string(r.Payload) != "echo:hi" || calls.Load() != 1 {
		t.Fatalf("a repeated dedupe key must return the stored reply without running: %q calls=%d", r.Payload, calls.Load())
	}

	// permanent errors are the final reply, with their code intact
	check(e.Register("strict", func(context.Context, store.Message) ([]byte, error) {
		return nil, &delivery.Permanent{Err: errs.New(errs.CodeInvalidArgument, "amount must be positive")}
	}, EntityOptions{}))
	r, err = e.Request(ctx, Message{EntityType: "strict", EntityID: "1"})
	check(err)
	if got := errs.Decode(r.Error); !errors.Is(got, errs.ErrInvalidArgument) || !strings.Contains(got.Error(), "positive") {
		t.Fatalf("permanent error reply: %v", got)
	}

	// panics are retried with backoff, then dead-lettered; the shard keeps draining
	var panics atomic.Int64
	check(e.Register("poison", func(context.Context, store.Message) ([]byte, error) {
		panics.Add(1)
		var m map[string]int
		m["x"] = 1 //lint:ignore SA5000 the handler must panic
		return nil, nil
	}, EntityOptions{MaxAttempts: 3, Backoff: func(int) time.Duration { return 10 * time.Millisecond }}))
	r, err = e.Request(ctx, Message{EntityType: "poison", EntityID: "p"})
	check(err)
	if got := errs.Decode(r.Error); !errors.Is(got, errs.ErrDeadLettered) || !strings.Contains(got.Error(), "panicked") {
		t.Fatalf("dead letter reply: %v", got)
	}
	if panics.Load() != 3 {
		t.Fatalf("attempts: %d", panics.Load())
	}
	dead, err := d.ListMessages(ctx, store.MessageFilter{State: store.StateDead})
	check(err)
	if len(dead) != 1 || !strings.Contains(dead[0].LastError, "panicked") {
		t.Fatalf("dead letters: %+v", dead)
	}
	r, err = e.Request(ctx, Message{EntityType: "echo", EntityID: "p", Payload: []byte("after")})
	check(err)
	if string(r.Payload) != "echo:after" {
		t.Fatal("draining stopped after a poisoned message")
	}
	// replaying the dead letter runs it again
	check(d.ReplayDead(ctx, dead[0].ID))
	e.Deliverer().Wake()
	testwait.For(t, 5*time.Second, "replayed message dead again", func() bool { return panics.Load() == 6 })

	// delayed delivery
	start := time.Now()
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	r, err = e.Request(dctx, Message{EntityType: "echo", EntityID: "later", Payload: []byte("x"), Delay: 300 * time.Millisecond})
	check(err)
	if el := time.Since(start); el < 300*time.Millisecond || el > 2*time.Second {
		t.Fatalf("delayed reply after %v", el)
	}

	// a deadline passes with a clear error
	check(e.Register("slow", func(ctx context.Context, m store.Message) ([]byte, error) {
		time.Sleep(300 * time.Millisecond)
		return nil, nil
	}, EntityOptions{}))
	sctx, scancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer scancel()
	if _, err := e.Request(sctx, Message{EntityType: "slow", EntityID: "1"}); !errors.Is(err, errs.ErrDeadline) {
		t.Fatalf("deadline: %v", err)
	}
}

func TestPerEntityOrderAndNoHeadOfLineBlocking(t *testing.T) {
	d := memory.New()
	e := startEngine(t, d, clusterConfig(t, "a"))
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string][]string{}
	block := make(chan struct{})
	e.Register("ord", func(ctx context.Context, m store.Message) ([]byte, error) {
		if m.EntityID == "stuck" {
			<-block
		}
		mu.Lock()
		seen[m.EntityID] = append(seen[m.EntityID], string(m.Payload))
		mu.Unlock()
		return nil, nil
	}, EntityOptions{})
	testwait.For(t, 5*time.Second, "shards", ownsAll(e))
	if _, err := e.Send(ctx, Message{EntityType: "ord", EntityID: "stuck", Payload: []byte("s")}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		for _, id := range []string{"a", "b", "c"} {
			if _, err := e.Send(ctx, Message{EntityType: "ord", EntityID: id, Payload: []byte(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	testwait.For(t, 5*time.Second, "other entities drained past a stuck one", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen["a"]) == 50 && len(seen["b"]) == 50 && len(seen["c"]) == 50
	})
	close(block)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"a", "b", "c"} {
		for i, p := range seen[id] {
			if p != fmt.Sprint(i) {
				t.Fatalf("entity %s out of order at %d: %v", id, i, seen[id])
			}
		}
	}
}

// The stall regression: a backlog for a type nobody has registered yet is
// neither claimed nor stranded, readiness says why, and registering drains it.
func TestLateRegistrationStallRegression(t *testing.T) {
	d := memory.New()
	ctx := context.Background()
	cfg := clusterConfig(t, "a")
	seed, err := New(ctx, Options{Config: cfg, Store: d, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := seed.Send(ctx, Message{EntityType: "late", EntityID: fmt.Sprint(i), Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	e := startEngine(t, d, cfg)
	e.Register("early", echo, EntityOptions{})
	testwait.For(t, 5*time.Second, "shards", ownsAll(e))
	time.Sleep(5 * cfg.PollInterval)
	msgs, _ := d.ListMessages(ctx, store.MessageFilter{EntityType: "late"})
	for _, m := range msgs {
		if m.State != store.StatePending || m.Attempts != 0 || m.ClaimedBy != "" {
			t.Fatalf("a message for an unregistered type was touched: %+v", m)
		}
	}
	// Nobody hosts "late": a cluster condition, not this instance's fault.
	h := e.Health(ctx)
	if !h.Ready || h.Drain.UnhostedBacklog["late"] != 20 {
		t.Fatalf("readiness stays green and shows the unhosted backlog: %+v", h)
	}
	ch := e.ClusterHealth(ctx)
	if ch.Healthy || len(ch.Conditions) != 1 || ch.Conditions[0].Kind != inspect.ConditionUnhostedType ||
		ch.Conditions[0].EntityType != "late" || ch.Conditions[0].Messages != 20 || !slices.Contains(ch.HostedTypes, "early") {
		t.Fatalf("cluster health must name the unhosted backlog: %+v", ch)
	}
	var got atomic.Int64
	e.Register("late", func(context.Context, store.Message) ([]byte, error) { got.Add(1); return nil, nil }, EntityOptions{})
	testwait.For(t, cfg.PollInterval+time.Second, "backlog consumed after registration", func() bool { return got.Load() == 20 })
	testwait.For(t, 3*time.Second, "cluster healthy again", func() bool {
		e.mu.Lock()
		e.drain = drainCache{}
		e.mu.Unlock()
		return e.ClusterHealth(ctx).Healthy && e.Health(ctx).Ready
	})
}

// crash stops an engine the way SIGKILL would: loops gone, sessions gone,
// no graceful leave.
func crash(e *Engine) {
	e.stopOnce.Do(func() {
		_ = e.loops.Stop(context.Background())
		e.runner.Abandon()
		e.deliv.StopShards(0)
		_ = e.rpcServer.Close()
		_ = e.httpServer.Close()
	})
}

func TestFailoverAfterCrash(t *testing.T) {
	d := memory.New()
	ctx := context.Background()
	var delivered sync.Map
	h := func(ctx context.Context, m store.Message) ([]byte, error) {
		delivered.Store(m.ID, true)
		return nil, nil
	}
	es := []*Engine{}
	for _, n := range []string{"a", "b", "c"} {
		e := startEngine(t, d, clusterConfig(t, n))
		e.Register("w", h, EntityOptions{})
		es = append(es, e)
	}
	testwait.For(t, 10*time.Second, "shards spread over three", func() bool {
		for _, e := range es {
			if len(e.Runner().Held()) != 10 {
				return false
			}
		}
		return true
	})
	// messages for the victim's shards, sent while its delivery is frozen
	victim := es[0]
	crash(victim)
	killed := time.Now()
	var ids []int64
	for i := 0; i < 100; i++ {
		s, err := es[1].Send(ctx, Message{EntityType: "w", EntityID: fmt.Sprint("k", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	testwait.For(t, 5*time.Second, "survivors deliver everything", func() bool {
		for _, id := range ids {
			if _, ok := delivered.Load(id); !ok {
				return false
			}
		}
		return true
	})
	if took := time.Since(killed); took > 2*time.Second {
		t.Fatalf("failover took %v", took)
	}
	testwait.For(t, 5*time.Second, "survivors own every shard", ownsAll(es[1], es[2]))
}

func TestHandoverUnderLoad(t *testing.T) {
	d := memory.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	running := map[int64]bool{}
	done := map[int64]int{}
	var double atomic.Int64
	h := func(ctx context.Context, m store.Message) ([]byte, error) {
		mu.Lock()
		if running[m.ID] {
			double.Add(1)
		}
		running[m.ID] = true
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		delete(running, m.ID)
		done[m.ID]++
		mu.Unlock()
		return nil, nil
	}
	base := startEngine(t, d, clusterConfig(t, "base"))
	base.Register("w", h, EntityOptions{})
	var sent []int64
	var sentMu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s, err := base.Send(ctx, Message{EntityType: "w", EntityID: fmt.Sprint("e", i%40)})
			if err != nil {
				t.Error(err)
				return
			}
			sentMu.Lock()
			sent = append(sent, s.ID)
			sentMu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for round := 0; round < 4; round++ {
		j, err := New(context.Background(), Options{Config: clusterConfig(t, fmt.Sprint("j", round)), Store: d, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		j.Register("w", h, EntityOptions{})
		if err := j.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
		if err := j.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	testwait.For(t, 10*time.Second, "every message delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		sentMu.Lock()
		defer sentMu.Unlock()
		for _, id := range sent {
			if done[id] == 0 {
				return false
			}
		}
		return true
	})
	if double.Load() != 0 {
		t.Fatalf("%d messages ran in two live handlers at once", double.Load())
	}
	t.Logf("%d messages delivered through 4 joins and leaves", len(sent))
}

func TestInspectAndHealthEndpoints(t *testing.T) {
	d := memory.New()
	cfg := clusterConfig(t, "a")
	cfg.InspectToken = "tok"
	e := startEngine(t, d, cfg)
	e.Register("echo", echo, EntityOptions{})
	testwait.For(t, 5*time.Second, "shards", ownsAll(e))
	base := "http://" + e.InspectAddr()
	get := func(method, path, token string) int {
		req, _ := http.NewRequest(method, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("GET", inspect.PathInspect, ""); c != 401 {
		t.Fatalf("no token: %d", c)
	}
	if c := get("POST", inspect.PathInspect, "tok"); c != 405 {
		t.Fatalf("POST: %d", c)
	}
	if c := get("GET", inspect.PathReady, "tok"); c != 200 {
		t.Fatalf("ready: %d", c)
	}
	if c := get("GET", inspect.PathLive, "tok"); c != 200 {
		t.Fatalf("live: %d", c)
	}
	doc := e.Inspect(context.Background())
	if doc.ReplicaID != "a" || len(doc.OwnedShards) != 30 || doc.ShardLock.Mode != "advisory" || !doc.Health.Ready || doc.OwnedShards[0].Epoch == 0 {
		t.Fatalf("inspect: %+v", doc)
	}
}

func TestClientOnlyOwnsNoShards(t *testing.T) {
	d := memory.New()
	worker := startEngine(t, d, clusterConfig(t, "worker"))
	worker.Register("echo", echo, EntityOptions{})
	client := startEngine(t, d, clusterConfig(t, "client"))
	testwait.For(t, 5*time.Second, "worker owns all", ownsAll(worker))
	time.Sleep(500 * time.Millisecond)
	if n := len(client.Runner().Held()); n != 0 {
		t.Fatalf("a runner hosting no entity type took %d shards", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := client.Request(ctx, Message{EntityType: "echo", EntityID: "x", Payload: []byte("1")})
	if err != nil || string(r.Payload) != "echo:1" {
		t.Fatalf("request from a client through the owner: %q %v", r.Payload, err)
	}
}

func TestClusterConfigMismatchRefusesToStart(t *testing.T) {
	d := memory.New()
	startEngine(t, d, clusterConfig(t, "a"))
	cfg := clusterConfig(t, "b")
	cfg.ShardCount = 31
	_, err := New(context.Background(), Options{Config: cfg, Store: d, Logger: quiet()})
	if !errors.Is(err, errs.ErrClusterMismatch) || !strings.Contains(err.Error(), "31 shards") {
		t.Fatalf("want cluster mismatch, got %v", err)
	}
}
