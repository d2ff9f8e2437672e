// The page in Chromium against a dashboard of a memory store: how often a
// busy stream makes it read.

package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

// pageServer serves a dashboard of a memory store whose stream ticks
// every 20 ms, counting the list reads (api/runs) the page makes.
func pageServer(t *testing.T) (*httptest.Server, *atomic.Int64, *memory.Store) {
	srv, lists, _, m := pageServerStreams(t)
	return srv, lists, m
}

// pageServerStreams is pageServer that also counts the open streams.
func pageServerStreams(t *testing.T) (*httptest.Server, *atomic.Int64, *atomic.Int64, *memory.Store) {
	t.Helper()
	m := memory.New()
	d, err := dashboard.New(dashboard.Config{Store: m, PollEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var lists, streams atomic.Int64
	h := d.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/api/runs") {
			lists.Add(1)
		}
		if strings.HasSuffix(r.URL.Path, "/api/stream") {
			streams.Add(1)
			defer streams.Add(-1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { d.Close(); srv.Close() })
	return srv, &lists, &streams, m
}

// TestPageRefreshBounded: a stream telling the list page to re-read 50
// times a second makes it read no more than a few times a second.
func TestPageRefreshBounded(t *testing.T) {
	srv, lists, _ := pageServer(t)
	ctx := tab(t)
	open(t, ctx, srv.URL+dashboard.Prefix+"#/workflows")
	truthy(t, ctx, "the workflows page streaming", `document.querySelector("#live").dataset.topic === "workflows" && document.querySelector("#main").dataset.panel === "workflows"`)
	before := lists.Load()
	time.Sleep(3 * time.Second) // about 150 ticks
	n := lists.Load() - before
	t.Logf("the list page read %d times in 3 s of a stream ticking every 20 ms", n)
	if n > 15 || n == 0 {
		t.Fatalf("%d list reads in 3 s: want a few (one per minRefresh)", n)
	}
}

// TestRedrawKeepsTyping: the run page redraws on every tick (20 ms), and
// what the operator types into the signal form survives the redraws.
func TestRedrawKeepsTyping(t *testing.T) {
	srv, _, m := pageServer(t)
	ctx := context.Background()
	x := store.Execution{ID: "typing1", Name: "order", Shard: "default/0", Input: []byte(`{}`)}
	if _, _, _, err := m.StartExecution(ctx, x, store.StartContext{}, &store.Message{Shard: "default/0", EntityType: "workflow/order", EntityID: x.ID, Tag: "start"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Record(ctx, store.IntrospectionBatch{Runs: []store.RunRecord{{ExecutionID: x.ID, Name: "order", Status: store.ExecSuspended, StartedAt: time.Now()}}}); err != nil {
		t.Fatal(err)
	}
	page := tab(t)
	open(t, page, srv.URL+dashboard.Prefix+"#/run/typing1")
	truthy(t, page, "the run page with its signal form", `document.querySelector("#signal-payload") !== null`)
	// typed as keys into the focused field: a redraw between two keys must
	// not lose the first (no node is looked up, which a redraw replaces)
	typeInto := func(id, text string) {
		eval(t, page, fmt.Sprintf(`document.getElementById(%q).focus(); true`, id), new(bool))
		if err := chromedp.Do(page, chromedp.KeyEvent(text)); err != nil {
			t.Fatal(err)
		}
	}
	typeInto("signal-name", "approve")
	typeInto("signal-payload", `{"approved":true}`)
	var typed float64
	eval(t, page, "Date.now()", &typed)
	truthy(t, page, "two redraws after the typing", fmt.Sprintf(`Number(document.querySelector("#main").dataset.loaded) > %v + 1200`, typed))
	var name, payload string
	eval(t, page, `document.querySelector("#signal-name").value`, &name)
	eval(t, page, `document.querySelector("#signal-payload").value`, &payload)
	var focused string
	eval(t, page, `document.activeElement ? document.activeElement.id : ""`, &focused)
	if name != "approve" || payload != `{"approved":true}` || focused != "signal-payload" {
		t.Fatalf("after redraws the form holds name %q payload %q (focus on %q): want what was typed", name, payload, focused)
	}
}

// TestHiddenTabClosesStream: a tab turning hidden closes its stream (the
// server sees it end); shown again it reopens it and re-reads once.
func TestHiddenTabClosesStream(t *testing.T) {
	srv, lists, streams, _ := pageServerStreams(t)
	page := tab(t)
	open(t, page, srv.URL+dashboard.Prefix+"#/workflows")
	truthy(t, page, "the workflows page streaming", `document.querySelector("#live").dataset.topic === "workflows" && document.querySelector("#main").dataset.panel === "workflows"`)
	testwait.For(t, within, "the page's stream open on the server", func() bool { return streams.Load() == 1 })
	// the browser's own event, as a tab switch fires it (headless Chromium never hides a tab)
	visible := func(v bool) {
		eval(t, page, fmt.Sprintf(`Object.defineProperty(document, "hidden", { configurable: true, get: () => %v }); document.dispatchEvent(new Event("visibilitychange")); true`, !v), new(bool))
	}
	visible(false)
	testwait.For(t, within, "the hidden tab's stream closed on the server", func() bool { return streams.Load() == 0 })
	truthy(t, page, "the page saying it paused", `document.querySelector("#live").dataset.mode === "hidden"`)
	time.Sleep(time.Second) // a read in flight when it hid ends
	before := lists.Load()
	time.Sleep(2 * time.Second) // a hidden tab reads nothing, whatever the cadence
	if n := lists.Load() - before; n != 0 {
		t.Fatalf("a hidden tab read the list %d times", n)
	}
	visible(true)
	testwait.For(t, within, "the stream reopened once the tab is shown", func() bool { return streams.Load() == 1 })
	testwait.For(t, within, "a re-read once shown", func() bool { return lists.Load() > before })
}
