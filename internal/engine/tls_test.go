package engine

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
	"github.com/voltro/voltro/internal/tlstest"
)

// syncBuf is a log the test reads back.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) has(substr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range strings.Split(s.b.String(), "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, substr) {
			return true
		}
	}
	return false
}

// withTLS is cfg with the runner port's TLS read from files (mutual when
// they include a CA), checked as config.FromEnv checks it.
func withTLS(t *testing.T, cfg config.Config, f tlstest.Files) config.Config {
	t.Helper()
	tl, err := rpc.LoadTLS(rpc.TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA})
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Check(cfg.RunnerHost); err != nil {
		t.Fatal(err)
	}
	cfg.RunnerTLS = tl
	return cfg
}

func startLogged(t *testing.T, d store.Driver, cfg config.Config) (*Engine, *syncBuf) {
	t.Helper()
	var buf syncBuf
	ctx := context.Background()
	e, err := New(ctx, Options{Config: cfg, Store: d, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e, &buf
}

// entityOn returns an id of type typ whose shard e holds.
func entityOn(t *testing.T, e *Engine, typ string) string {
	t.Helper()
	for i := 0; i < 100000; i++ {
		id := "ent-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		if e.deliv.Epoch(e.ShardOf(typ, id, "")) > 0 {
			return id
		}
	}
	t.Fatal("no entity on the engine's shards")
	return ""
}

// Two runners under mutual TLS: a request crosses from one to the other
// and its reply comes back, both pushed over the runner port (polling is
// set to a minute, so only the wake-up and the reply push can be this
// fast); a volatile message crosses too. A caller without a certificate of
// the cluster's CA is refused at the handshake and counted.
func TestMessagesCrossRunnersOverMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "engine CA")
	d := memory.New()
	var es []*Engine
	var logs []*syncBuf
	for _, name := range []string{"a", "b"} {
		cfg := withTLS(t, clusterConfig(t, name), ca.Issue(t, "127.0.0.1").WriteFiles(t, t.TempDir(), ca))
		cfg.PollInterval = time.Minute
		e, l := startLogged(t, d, cfg)
		if err := e.Register("echo", echo, EntityOptions{}); err != nil {
			t.Fatal(err)
		}
		es, logs = append(es, e), append(logs, l)
	}
	a, b := es[0], es[1]
	testwait.For(t, 10*time.Second, "the shards shared out", func() bool {
		return ownsAll(a, b)() && len(a.Runner().Held()) > 0 && len(b.Runner().Held()) > 0
	})
	id := entityOn(t, a, "echo")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		start := time.Now()
		r, err := b.Request(ctx, Message{EntityType: "echo", EntityID: id, Payload: []byte(`{"n":1}`)})
		if err != nil || string(r.Payload) != `echo:{"n":1}` {
			t.Fatalf("request across runners: %q %v", r.Payload, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("the request took %s: the wake-up or the reply push did not cross", took)
		}
	}
	if out, err := b.Volatile(ctx, Message{EntityType: "echo", EntityID: id, Payload: []byte("v")}); err != nil || string(out) != "echo:v" {
		t.Fatalf("volatile across runners: %q %v", out, err)
	}
	if a.RPCRefused() != 0 || b.RPCRefused() != 0 {
		t.Fatalf("refusals among peers: %d %d", a.RPCRefused(), b.RPCRefused())
	}
	req := rpc.VolatileRequest{Shard: a.ShardOf("echo", id, ""), EntityType: "echo", EntityID: id, Payload: []byte("forged")}
	if _, err := rpc.NewClient(a.secrets[0], "attacker:1").Volatile(ctx, a.Address(), req); err == nil {
		t.Fatal("a plain call with the secret was accepted")
	}
	other := tlstest.NewCA(t, "other CA")
	f := other.Issue(t, "127.0.0.1").WriteFiles(t, t.TempDir(), nil)
	stranger, err := rpc.LoadTLS(rpc.TLSFiles{Cert: f.Cert, Key: f.Key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rpc.NewClientWith(rpc.ClientOptions{Secret: a.secrets[0], From: "attacker:1", TLS: stranger, Logger: quiet()}).Volatile(ctx, a.Address(), req); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}
	testwait.For(t, 5*time.Second, "the refusals counted and logged", func() bool {
		return a.RPCRefused() == 2 && logs[0].has("refused a TLS handshake")
	})
}

// One runner with mutual TLS, one without: every call between them fails
// at the handshake, each side says why in its log, and still nothing
// stored is lost: the message is in the store before any call, so the
// owner's polling delivers it and the requester's polling reads the reply.
// A volatile message, which exists only in the call, fails for its caller
// with the reason.
func TestTLSMismatchLosesNoStoredMessage(t *testing.T) {
	ca := tlstest.NewCA(t, "mismatch CA")
	d := memory.New()
	cfgA := withTLS(t, clusterConfig(t, "a"), ca.Issue(t, "127.0.0.1").WriteFiles(t, t.TempDir(), ca))
	cfgC := clusterConfig(t, "c") // plain HTTP
	cfgA.PollInterval, cfgC.PollInterval = 200*time.Millisecond, 200*time.Millisecond
	a, logA := startLogged(t, d, cfgA)
	c, logC := startLogged(t, d, cfgC)
	for _, e := range []*Engine{a, c} {
		if err := e.Register("echo", echo, EntityOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 10*time.Second, "the shards shared out", func() bool {
		return ownsAll(a, c)() && len(a.Runner().Held()) > 0 && len(c.Runner().Held()) > 0
	})
	id := entityOn(t, a, "echo")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := c.Request(ctx, Message{EntityType: "echo", EntityID: id, Payload: []byte("stored")})
	if err != nil || string(r.Payload) != "echo:stored" {
		t.Fatalf("a stored request across mismatched runners: %q %v", r.Payload, err)
	}
	_, err = c.Volatile(ctx, Message{EntityType: "echo", EntityID: id, Payload: []byte("volatile")})
	if !errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "speaks TLS") {
		t.Fatalf("a volatile message to a TLS runner from a plain one: %v", err)
	}
	testwait.For(t, 5*time.Second, "both sides said why", func() bool {
		return logC.has("has no VOLTRO_RUNNER_TLS_CERT") && // c's wake-up and volatile to a
			logA.has("does not speak TLS") && // a's reply push to c
			logA.has("not TLS") // a refused c's plain calls
	})
}
