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
)

// pageServer serves a dashboard of a memory store whose stream ticks
// every 20 ms, counting the list reads (api/runs) the page makes.
func pageServer(t *testing.T) (*httptest.Server, *atomic.Int64, *memory.Store) {
	t.Helper()
	m := memory.New()
	d, err := dashboard.New(dashboard.Config{Store: m, PollEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var lists atomic.Int64
	h := d.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/api/runs") {
			lists.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { d.Close(); srv.Close() })
	return srv, &lists, m
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
	if err := chromedp.Do(page, chromedp.SendKeys("#signal-name", "approve"), chromedp.SendKeys("#signal-payload", `{"approved":true}`)); err != nil {
		t.Fatal(err)
	}
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
