// The page in Chromium against a dashboard of a memory store: how often a
// busy stream makes it read.

package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/store/memory"
)

// pageServer serves a dashboard of a memory store whose stream ticks
// every 20 ms, counting the list reads (api/runs) the page makes.
func pageServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	d, err := dashboard.New(dashboard.Config{Store: memory.New(), PollEvery: 20 * time.Millisecond})
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
	return srv, &lists
}

// TestPageRefreshBounded: a stream telling the list page to re-read 50
// times a second makes it read no more than a few times a second.
func TestPageRefreshBounded(t *testing.T) {
	srv, lists := pageServer(t)
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
