// When the database goes away under an open page, the page keeps the last
// answer under a red banner saying how old it is.

package dashboard_test

import (
	"context"
	"io"
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
	"github.com/voltro/voltro/internal/store"
	storeopen "github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/testdb"
)

// cutter forwards TCP connections to a server until cut, which closes
// the listener and every connection: the database, as its clients see
// it, is gone. Frozen, it keeps the connections open and forwards nothing:
// the database is black-holed.
type cutter struct {
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	frozen chan struct{} // closed by freeze
	gone   chan struct{} // closed by cut
	once   sync.Once
	cutOne sync.Once
}

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, frozen: make(chan struct{}), gone: make(chan struct{})}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { c.pipe(out, in); out.Close() }()
			go func() { c.pipe(in, out); in.Close() }()
		}
	}()
	t.Cleanup(c.cut)
	return c
}

// pipe copies from src to dst until either fails or the cutter freezes.
func (c *cutter) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-c.frozen:
			<-c.gone // black-holed: the connection stays open, silent
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *cutter) freeze() { c.once.Do(func() { close(c.frozen) }) }

func (c *cutter) cut() {
	c.cutOne.Do(func() { close(c.gone) })
	c.ln.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// TestDatabaseGoneKeepsLastAnswer: the Cluster panel of a dashboard whose
// PostgreSQL becomes unreachable keeps its table, under the banner.
func TestDatabaseGoneKeepsLastAnswer(t *testing.T) {
	ctx := context.Background()
	url := testdb.Postgres(t, "dashgone")
	cut := newCutter(t, "127.0.0.1:5432")
	url = strings.Replace(url, "127.0.0.1:5432", cut.ln.Addr().String(), 1)
	cfg, err := config.FromEnv(func(string) string { return "" }, url)
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
	c := dashboard.Config{Store: d, Logger: slog.New(slog.DiscardHandler)}
	dashboard.Sources(&c, d, cfg)
	c.Heartbeat = 500 * time.Millisecond // the Cluster panel re-reads at this cadence
	dash, err := dashboard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dash.Handler())
	t.Cleanup(func() { dash.Close(); srv.Close() })
	page := tab(t)
	open(t, page, srv.URL+dashboard.Prefix+"#/cluster")
	truthy(t, page, "the Cluster table", `document.querySelector("#instances") !== null && document.querySelector("#main").dataset.panel === "cluster"`)
	cut.cut()
	truthy(t, page, "the read-error banner above the Cluster table", `(() => {
		const b = document.querySelector("#load-error.banner");
		return b !== null && /showing what was read \d+ s ago/.test(b.textContent) && document.querySelector("#instances") !== null;
	})()`)
	var text string
	eval(t, page, `document.querySelector("#load-error").textContent`, &text)
	t.Logf("with the database gone the page says: %s", text)
}

// TestBlackHoledFeedDoesNotBlockStreams: with the database black-holed
// after the feed opened, a stream's subscription gives up in time, the
// stream polls and says why, and another stream of the topic joins and
// leaves meanwhile.
func TestBlackHoledFeedDoesNotBlockStreams(t *testing.T) {
	ctx := context.Background()
	url := testdb.Postgres(t, "dashhole")
	hole := newCutter(t, "127.0.0.1:5432")
	url = strings.Replace(url, "127.0.0.1:5432", hole.ln.Addr().String(), 1)
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
	feed, err := cdc.Open(ctx, cdc.Config{URL: url, ReplicaID: "dash-hole", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	dash, err := dashboard.New(dashboard.Config{Store: d, Feed: feed, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dash.Handler())
	t.Cleanup(func() { hole.cut(); dash.Close(); srv.Close(); feed.Close() })
	// a subscription before the black hole leaves the feed's pool a
	// connection, which the streams' subscriptions then wait on for ever
	wctx, wcancel := context.WithCancel(ctx)
	if _, err := feed.Subscribe(wctx, store.TableRunners, nil); err != nil {
		t.Fatal(err)
	}
	wcancel()
	hole.freeze()
	hello := make(chan string, 2)
	for range 2 {
		go func() {
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			req, _ := http.NewRequestWithContext(sctx, "GET", srv.URL+dashboard.Prefix+"api/stream", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				hello <- err.Error()
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, 4096)
			n, _ := resp.Body.Read(buf)
			hello <- string(buf[:n])
		}()
	}
	deadline := time.After(45 * time.Second) // the subscription gives up after 10 s
	for range 2 {
		select {
		case h := <-hello:
			if !strings.Contains(h, `"mode":"poll`) || !strings.Contains(h, "change feed failed") {
				t.Fatalf("a stream's hello over a black-holed feed: %q, want poll saying why", h)
			}
			t.Logf("hello: %s", strings.TrimSpace(h))
		case <-deadline:
			t.Fatal("a stream got no hello within 45 s over a black-holed feed: joining is blocked")
		}
	}
}
