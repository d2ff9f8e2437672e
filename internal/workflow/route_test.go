package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

// routeNode is one clustered instance on a shared store, with workflows.
type routeNode struct {
	e *engine.Engine
	w *Engine
}

func startRouteNode(t *testing.T, d store.Driver, name string, heartbeat time.Duration, fn Func) routeNode {
	t.Helper()
	cfg, err := config.FromEnv(func(string) string { return "" }, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	cfg.RunnerStorage = config.RunnerStorageSQL
	cfg.RunnerHost, cfg.RunnerPort = "127.0.0.1", port
	cfg.ReplicaID, cfg.ClusterSecret, cfg.Warnings = name, "test-secret", nil
	cfg.Heartbeat, cfg.PollInterval, cfg.ShardCount = heartbeat, 100*time.Millisecond, 12
	ctx := context.Background()
	e, err := engine.New(ctx, engine.Options{Config: cfg, Store: d, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w := New(e)
	if err := w.Register("greet", fn); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()); _ = w.Stop(context.Background()) })
	return routeNode{e, w}
}

// runOn returns a fresh run id (of a start without a key) whose shard n
// holds and serves.
func runOn(t *testing.T, n routeNode) string {
	t.Helper()
	typ := EntityPrefix + "greet"
	for i := 0; i < 10000; i++ {
		id := newRunID(time.Now())
		if n.e.ClaimFor(n.e.ShardOf(typ, id, ""), typ) != nil {
			return id
		}
	}
	t.Fatal("no run id hashes to a shard the node holds")
	return ""
}

// A start made on an instance that does not hold the run's shard is run
// by the holder, which inserted it claimed and runs it at once, and pushes
// the finished run back: the starter's Result gets it without reading the
// row, and neither side keeps anything once the run ended.
func TestStartRoutedToTheShardHolder(t *testing.T) {
	d := memory.New()
	release := make(chan struct{})
	ranOn := make(chan string, 4)
	var nodes [2]routeNode
	fn := func(addr *string) Func {
		return func(c *Context, input []byte) ([]byte, error) {
			return c.Step("greet", func(ctx context.Context) ([]byte, error) {
				ranOn <- *addr
				<-release
				return append([]byte(`"hello `), input[1:]...), nil
			}, RetryPolicy{})
		}
	}
	var addrA, addrB string
	nodes[0] = startRouteNode(t, d, "a", 200*time.Millisecond, fn(&addrA))
	nodes[1] = startRouteNode(t, d, "b", 200*time.Millisecond, fn(&addrB))
	a, b := nodes[0], nodes[1]
	addrA, addrB = a.e.Address(), b.e.Address()
	testwait.For(t, 20*time.Second, "a and b share the shards and agree who holds which", func() bool {
		ha, hb := a.e.Runner().Held(), b.e.Runner().Held()
		if len(ha) == 0 || len(hb) == 0 || len(ha)+len(hb) != 12 {
			return false
		}
		for sh := range hb {
			if a.e.Runner().Owner(sh) != addrB {
				return false
			}
		}
		return true
	})
	id := runOn(t, b)
	ctx := context.Background()
	const trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	x, _, err := a.w.Start(ctx, "greet", []byte(`"ann"`), StartOptions{ID: id, Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	if x.ID != id || x.CreatedAt.IsZero() || x.Shard != b.e.ShardOf(EntityPrefix+"greet", id, "") || string(x.Input) != `"ann"` {
		t.Fatalf("the start answered %+v", x)
	}
	if got := <-ranOn; got != addrB {
		t.Fatalf("run on %s, not on the holder %s", got, addrB)
	}
	// While it runs on b: a waits for b's push, b knows whom to push to.
	if peer, ok := a.w.routed.get(id); !ok || peer != addrB {
		t.Fatalf("a does not expect b's push: %q %v", peer, ok)
	}
	if peer, ok := b.w.starters.get(id); !ok || peer != addrA {
		t.Fatalf("b will not push the end to a: %q %v", peer, ok)
	}
	// b records what it can vouch for: a routed start, under a's trace.
	sc, err := a.w.ws.GetStartContext(ctx, id)
	if err != nil || sc.Subject != "" || sc.Source != SourceRouted || sc.Trace == "" || sc.Trace[3:35] != trace[3:35] || sc.ParentID != "" {
		t.Fatalf("start context: %+v %v", sc, err)
	}
	done := make(chan store.Execution, 1)
	go func() {
		x, err := a.w.Result(ctx, id)
		if err != nil {
			t.Error(err)
		}
		done <- x
	}()
	close(release)
	got := <-done
	if got.Status != store.ExecCompleted || string(got.Output) != `"hello ann"` {
		t.Fatalf("result: %s %s", got.Status, got.Output)
	}
	// Only b's push takes the run out of a's routed set.
	testwait.For(t, 5*time.Second, "the push handled on both sides", func() bool {
		_, waiting := a.w.routed.get(id)
		_, pushing := b.w.starters.get(id)
		return !waiting && !pushing
	})

	// A signed caller that is not a runner of the cluster gets no start
	// (its run's end would be pushed to an address of its choosing).
	stray := runOn(t, b)
	body, _ := json.Marshal(routedStart{Exec: store.Execution{ID: stray, Name: "greet", Input: []byte(`"x"`)}})
	shard := b.e.ShardOf(EntityPrefix+"greet", stray, "")
	if _, err := rpc.NewClient("test-secret", "127.0.0.1:1").Start(ctx, addrB, rpc.StartRequest{Shard: shard, Body: body}); !errors.Is(err, errs.ErrNotOwner) {
		t.Fatalf("a start from an unlisted address: %v", err)
	}
	if _, err := a.w.ws.GetExecution(ctx, stray); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("an unlisted caller's start was stored: %v", err)
	}

	// A start for a shard a holds is not routed.
	own := runOn(t, a)
	if _, _, err := a.w.Start(ctx, "greet", []byte(`"bo"`), StartOptions{ID: own}); err != nil {
		t.Fatal(err)
	}
	if got := <-ranOn; got != addrA {
		t.Fatalf("a's own run ran on %s", got)
	}
	if _, ok := a.w.routed.get(own); ok {
		t.Fatal("a routed a start for its own shard")
	}
	// Starting the routed run again finds it, on either instance.
	for _, n := range nodes {
		x, _, err := n.w.Start(ctx, "greet", []byte(`"ann"`), StartOptions{ID: id})
		if err != nil || x.Status != store.ExecCompleted {
			t.Fatalf("a repeated start: %s %v", x.Status, err)
		}
	}
}

// A holder whose runner port accepts connections and never answers (a
// frozen or wedged process whose database session still holds its
// leases): the first start routed to it gives up after routeTimeout and
// is started here, later ones are not sent to it for a while, and both
// runs complete once its shards pass to a live runner.
func TestStartRoutedToAHolderThatNeverAnswers(t *testing.T) {
	const wedgedLease = 5 * time.Second
	d := memory.New()
	ctx := context.Background()
	// The wedged holder: a port that never answers, a fresh runner row,
	// and the lease of every shard.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	wedged := ln.Addr().String()
	if err := d.RegisterRunner(ctx, store.Runner{Address: wedged, ReplicaID: "wedged", EntityTypes: []string{EntityPrefix + "greet"}, Healthy: true}); err != nil {
		t.Fatal(err)
	}
	// The memory store's default mode, as every runner of a cluster uses
	// one: its session holds the wedged runner's presence, so a sees a
	// live peer that merely never answers.
	l, err := d.NewLocker(ctx, store.LockAdvisory, wedged)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]int64{}
	for i := 0; i < 12; i++ {
		sh := "default/" + strconv.Itoa(i)
		epoch, ok, err := l.Acquire(ctx, sh, wedgedLease)
		if err != nil || !ok {
			t.Fatalf("acquire %s: %v %v", sh, ok, err)
		}
		held[sh] = epoch
	}
	stopBeats := make(chan struct{})
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		for {
			select {
			case <-stopBeats:
				_ = l.Close() // its process dies: its leases go
				return
			case <-time.After(100 * time.Millisecond):
				_ = l.Heartbeat(ctx, wedged)
				_, _ = l.Refresh(ctx, held, wedgedLease)
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-stopBeats:
		default:
			close(stopBeats)
		}
		<-beating
	})

	// A heartbeat of 1 s: a takes the wedged runner for dead after 3 s
	// without a beat, so a stalled test goroutine does not end the premise.
	a := startRouteNode(t, d, "a", time.Second, func(c *Context, input []byte) ([]byte, error) { return input, nil })
	var ids []string
	testwait.For(t, 20*time.Second, "a's view names the wedged holder for some shards", func() bool {
		ids = ids[:0]
		for i := 0; i < 10000 && len(ids) < 2; i++ {
			id := newRunID(time.Now())
			if a.e.Runner().Owner(a.e.ShardOf(EntityPrefix+"greet", id, "")) == wedged {
				ids = append(ids, id)
			}
		}
		return len(ids) == 2
	})
	for _, id := range ids {
		if _, _, err := a.w.Start(ctx, "greet", []byte(`"x"`), StartOptions{ID: id}); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
	}
	if n := a.e.RouteCounts(); n.Routed != 0 || n.Failed != 1 || n.Avoided < 1 {
		t.Fatalf("route counts: %+v (want one failure, then the holder avoided)", n)
	}
	for _, id := range ids {
		x, err := a.w.ws.GetExecution(ctx, id)
		if err != nil || x.Status != store.ExecRunning {
			t.Fatalf("%s is not stored, not yet run: %s %v", id, x.Status, err)
		}
	}
	close(stopBeats) // the wedged process dies: a takes its shards over
	for _, id := range ids {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		x, err := a.w.Result(rctx, id)
		cancel()
		if err != nil || x.Status != store.ExecCompleted {
			t.Fatalf("%s: %s %v", id, x.Status, err)
		}
	}
}
