// When the database goes away under an open page, the page keeps the last
// answer under a red banner saying how old it is.

package dashboard_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dashboard"
	storeopen "github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/testdb"
)

// cutter forwards TCP connections to a server until cut, which closes
// the listener and every connection: the database, as its clients see
// it, is gone.
type cutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln}
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
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(c.cut)
	return c
}

func (c *cutter) cut() {
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
