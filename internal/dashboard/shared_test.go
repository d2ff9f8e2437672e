package dashboard_test

// The Cluster panel's collection is the server's, not the tab's: with N
// tabs of Chromium open on it, `cluster status` is collected as often as
// with one (the heartbeat cadence), and not at all once no page is open.

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/status"
	storeopen "github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

func TestClusterCollectionShared(t *testing.T) {
	ctx := context.Background()
	url := testdb.Postgres(t, "dashshare")
	env := map[string]string{"CDC": "1", "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s"}
	cfg, err := config.FromEnv(func(k string) string { return env[k] }, url)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	d, err := storeopen.Open(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	feed, err := cdc.Open(ctx, cdc.Config{URL: url, ReplicaID: "dash-share", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	c := dashboard.Config{Store: d, Feed: feed}
	dashboard.Sources(&c, d, cfg)
	var collections atomic.Int64
	collect := c.Cluster
	c.Cluster = func(ctx context.Context) (*status.Report, error) {
		collections.Add(1)
		return collect(ctx)
	}
	dash, err := dashboard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer dash.Close()
	srv := httptest.NewServer(dash.Handler())
	defer srv.Close()

	hb := cfg.Heartbeat
	window := 5 * hb
	// rate counts the collections in a window: a measurement, not a wait
	rate := func() float64 {
		a, began := collections.Load(), time.Now()
		time.Sleep(window)
		return float64(collections.Load()-a) / time.Since(began).Seconds()
	}
	if r := rate(); r != 0 {
		t.Fatalf("%.2f collections/s with no page open, want none", r)
	}
	tab(t) // starts the package's browser
	var closers []context.CancelFunc
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	openTabs := func(n int) {
		for range n {
			ctx, cancel := chromedp.NewContext(pkg.browser)
			closers = append(closers, cancel)
			open(t, ctx, srv.URL+dashboard.Prefix+"#/cluster")
			truthy(t, ctx, "the Cluster panel, streaming its topic", `document.querySelector("#main").dataset.panel === "cluster" && document.querySelector("#live").dataset.topic === "cluster"`)
		}
	}
	openTabs(1)
	one := rate()
	openTabs(3)
	four := rate()
	t.Logf("status collections: %.2f/s with 1 tab, %.2f/s with 4 tabs (heartbeat %s: one per heartbeat expected)", one, four, hb)
	// per tab, four tabs would collect four times as often
	if four > 1.5*one+0.25 {
		t.Fatalf("collections grew with the tabs: %.2f/s with 1, %.2f/s with 4", one, four)
	}
	for _, c := range closers {
		c()
	}
	closers = nil
	testwait.For(t, within, "the collections to stop once every tab closed", func() bool {
		a := collections.Load()
		time.Sleep(2 * hb)
		return collections.Load() == a
	})
}

// TestPanelStream: a panel's stream says how it follows the panel (a poll
// without a feed), tells the page when the answer is there, and refuses a
// panel it does not know.
func TestPanelStream(t *testing.T) {
	srv, _ := serve(t, dashboard.Config{PollEvery: 10 * time.Millisecond})
	if code, body := call(t, "GET", srv.URL+dashboard.Prefix+"api/stream?panel=bogus", "", ""); code != http.StatusBadRequest || !strings.Contains(body, "use workflows") {
		t.Fatalf("an unknown panel: %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+dashboard.Prefix+"api/stream?panel=messages", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), "event: panel") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("stream ended before a panel event: %v (%q)", err, got.String())
		}
		got.Write(buf[:n])
	}
	if !strings.Contains(got.String(), `"mode":"poll 10ms"`) || !strings.Contains(got.String(), `"panel":"messages"`) {
		t.Fatalf("the stream did not say it polls the messages: %q", got.String())
	}
	// the page's read is the one the topic made
	if code, body := call(t, "GET", srv.URL+dashboard.Prefix+"api/messages", "", ""); code != 200 || !strings.Contains(body, `"deadLetters"`) {
		t.Fatalf("the messages answer: %d %s", code, body)
	}
}
