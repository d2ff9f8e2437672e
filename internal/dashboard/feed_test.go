// The standalone dashboard holds no change-feed connection while no page
// is open, and opens one with the first stream.

package dashboard_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// TestStandaloneFeedOnlyWhileStreaming: `voltro dashboard` on PostgreSQL
// with CDC has no LISTEN backend until a page's stream opens.
func TestStandaloneFeedOnlyWhileStreaming(t *testing.T) {
	dbURL := testdb.Postgres(t, "dashlazy")
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dbname := strings.TrimPrefix(u.Path, "/")
	admin, err := sql.Open("pgx", testdb.PostgresAdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	listeners := func() int {
		var n int
		if err := admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND query ILIKE 'LISTEN ' || $2 || '%'`, dbname, postgres.CDCChannel).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	cli(t, baseEnv(dbURL), "migrate")
	addr := "127.0.0.1:" + freePort(t)
	p := start(t, "voltro dashboard", baseEnv(dbURL), "dashboard", "--addr", addr)
	p.waitOutput(t, "voltro dashboard for", 30*time.Second)
	time.Sleep(2 * time.Second) // what start-up opens, given time to connect
	if n := listeners(); n != 0 {
		t.Fatalf("%d LISTEN %s backends with no page open", n, postgres.CDCChannel)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+dashboard.Prefix+"api/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	if !strings.Contains(string(buf[:n]), `"mode":"feed`) {
		t.Fatalf("the first stream does not follow the feed: %q\n%s", buf[:n], p.output())
	}
	testwait.For(t, 20*time.Second, "a LISTEN backend while a stream is open", func() bool { return listeners() > 0 })
}
