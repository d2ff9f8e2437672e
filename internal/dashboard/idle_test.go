package dashboard_test

// What the dashboard costs the database: nothing while no page is open
// (TestIdleNoPageNoQueries, in the suite), and, with the change feed, next
// to nothing while one is open on a quiet cluster, whichever panel it
// shows (BenchmarkIdleQueries; both measured by the server's statement
// counter, store.StatementCounter, on a database only they use).

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/store"
	storeopen "github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/testdb"
)

// idleWindow is how long each case counts statements.
const idleWindow = 20 * time.Second

// TestIdleNoPageNoQueries: an instance's store and change feed with the
// dashboard served and no page open send the database no statement in 30 s
// (watched live in pg_stat_activity, testdb.PostgresStatements: the
// server's transaction counter, which BenchmarkIdleQueries reads, hears
// of a backend's statements up to a minute late on a busy server, and
// once counted four from the set-up inside the window).
func TestIdleNoPageNoQueries(t *testing.T) {
	ctx := context.Background()
	url := testdb.Postgres(t, "dashidletest")
	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"CDC": "1"}[k] }, url)
	if err != nil {
		t.Fatal(err)
	}
	d, err := storeopen.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	feed, err := cdc.Open(ctx, cdc.Config{URL: url, ReplicaID: "dash-idle-test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	c := dashboard.Config{Store: d, Feed: feed}
	dashboard.Sources(&c, d, cfg)
	dash, err := dashboard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer dash.Close()
	srv := httptest.NewServer(dash.Handler())
	defer srv.Close()
	// 30 s: three heartbeats of the dashboard's default 10 s.
	if seen := testdb.PostgresStatements(t, url, 30*time.Second); len(seen) > 0 {
		t.Fatalf("the dashboard with no page open sent %d statement(s) in 30 s:\n  %s", len(seen), strings.Join(seen, "\n  "))
	}
}

func BenchmarkIdleQueries(b *testing.B) {
	ctx := context.Background()
	url := testdb.Postgres(b, "dashidle")
	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"CDC": "1"}[k] }, url)
	if err != nil {
		b.Fatal(err)
	}
	d, err := storeopen.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	counter := d.Capabilities().Bench.Statements
	if counter == nil {
		b.Skip("no statement counter")
	}
	feed, err := cdc.Open(ctx, cdc.Config{URL: url, ReplicaID: "dash-idle", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer feed.Close()
	measure := func(b *testing.B) {
		for b.Loop() {
			rate, err := store.StatementRate(ctx, counter, idleWindow)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(rate, "queries/s")
		}
	}
	// the store and the feed alone: what the dashboard's figures are beside
	b.Run("NoDashboard", measure)
	c := dashboard.Config{Store: d, Feed: feed}
	dashboard.Sources(&c, d, cfg)
	dash, err := dashboard.New(c)
	if err != nil {
		b.Fatal(err)
	}
	defer dash.Close()
	srv := httptest.NewServer(dash.Handler())
	defer srv.Close()
	b.Run("NoPageOpen", measure)
	// a page open on each panel: the workflows topic (the default) costs
	// the feed only; the others read their panel once per heartbeat (the
	// default 10 s), the logs every 2 s (no instance here: the runners
	// table only), whatever the number of tabs
	for _, panel := range []string{"", "cluster", "schedules", "messages", "logs"} {
		name := "StreamOpenQuietCluster"
		if panel != "" {
			name += "/" + panel
		}
		b.Run(name, func(b *testing.B) {
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			req, _ := http.NewRequestWithContext(sctx, http.MethodGet, srv.URL+dashboard.Prefix+"api/stream?panel="+panel, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
			measure(b)
		})
	}
}
