// The event stream on the instance's own kind of server: rpc.Bounded,
// whose write and read timeouts bound a whole response, must not cut a
// stream that is still being read.

package dashboard_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	storeopen "github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// TestStreamOutlivesServerTimeouts: a stream served through rpc.Bounded
// with 200 ms timeouts stays open across many of them and still delivers
// an event written long after they passed.
func TestStreamOutlivesServerTimeouts(t *testing.T) {
	d, err := dashboard.New(dashboard.Config{Store: memory.New(), PollEvery: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.Bounded(d.Handler(), 1<<20, 8, 200*time.Millisecond, slog.New(slog.DiscardHandler))
	srv.ReadTimeout = 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { d.Close(); _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+ln.Addr().String()+dashboard.Prefix+"api/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	buf := make([]byte, 4096)
	var got strings.Builder
	// two ticks: the second comes 3 s in, fifteen timeouts later
	for strings.Count(got.String(), "event: tick") < 2 {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("the stream ended after %v: %v (%q)", time.Since(start).Round(time.Millisecond), err, got.String())
		}
		got.Write(buf[:n])
	}
}

// TestWorkflowsTopicCoalesces: a burst of run records on PostgreSQL with
// the change feed reaches an open stream as far fewer events than changes.
func TestWorkflowsTopicCoalesces(t *testing.T) {
	ctx := context.Background()
	url := testdb.Postgres(t, "dashburst")
	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"CDC": "1"}[k] }, url)
	if err != nil {
		t.Fatal(err)
	}
	d, err := storeopen.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	feed, err := cdc.Open(ctx, cdc.Config{URL: url, ReplicaID: "dash-burst", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { feed.Close() })
	dash, err := dashboard.New(dashboard.Config{Store: d, Feed: feed})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dash.Handler())
	t.Cleanup(func() { dash.Close(); srv.Close() })
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "GET", srv.URL+dashboard.Prefix+"api/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var mu sync.Mutex
	var got strings.Builder
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			mu.Lock()
			got.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	text := func() string { mu.Lock(); defer mu.Unlock(); return got.String() }
	testwait.For(t, 10*time.Second, "the hello event", func() bool { return strings.Contains(text(), "event: hello") })
	const n = 60
	rec := store.Introspection(d)
	for i := range n {
		r := store.RunRecord{ExecutionID: fmt.Sprintf("burst%d", i), Name: "order", Status: store.ExecRunning, StartedAt: time.Now()}
		if err := rec.Record(ctx, store.IntrospectionBatch{Runs: []store.RunRecord{r}}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 20*time.Second, "a change event", func() bool { return strings.Contains(text(), "event: change") })
	time.Sleep(2 * time.Second) // the burst's tail, well past the gap
	events := strings.Count(text(), "event: change") + strings.Count(text(), "event: resync")
	t.Logf("%d run records reached the stream as %d events", n, events)
	if events > n/4 {
		t.Fatalf("%d events for a burst of %d run records: the workflows topic does not coalesce", events, n)
	}
}
