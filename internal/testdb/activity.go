// What is connected to a PostgreSQL test database and what it last ran,
// for a test that measured statements it did not expect to say whose.

package testdb

import (
	"context"
	"database/sql"
	"fmt"
	neturl "net/url"
	"strings"
	"testing"
	"time"
)

// PostgresActivity lists the backends connected to the database at url
// (pg_stat_activity, less the listing's own): application, state, when it
// last changed, and the start of the last query.
func PostgresActivity(t testing.TB, url string) string {
	t.Helper()
	var b strings.Builder
	admin(t, "pgx", url, func(ctx context.Context, db *sql.DB) {
		rows, err := db.QueryContext(ctx, `SELECT pid, application_name, backend_type, COALESCE(state, ''),
			COALESCE(to_char(state_change, 'HH24:MI:SS.MS'), ''), left(regexp_replace(query, '\s+', ' ', 'g'), 100)
			FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY pid`)
		if err != nil {
			fmt.Fprintf(&b, "pg_stat_activity: %v", err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var pid int
			var app, typ, state, changed, query string
			if err := rows.Scan(&pid, &app, &typ, &state, &changed, &query); err != nil {
				fmt.Fprintf(&b, "pg_stat_activity: %v", err)
				return
			}
			fmt.Fprintf(&b, "\n  pid %d %s (%s) %s since %s: %s", pid, app, typ, state, changed, query)
		}
	})
	return b.String()
}

// PostgresStatements watches the backends connected to the database at url
// for d, from a connection to the admin database (so the watch itself adds
// nothing there), and returns one line per statement it saw begin: a
// backend whose last query started anew, or a new backend. It samples
// pg_stat_activity every 100 ms, which is live, unlike the transaction
// counters of pg_stat_database that a backend reports up to a minute late
// on a busy server; a statement is missed only if another on the same
// backend starts within the same 100 ms, and a connection only if it opens
// and closes within them.
func PostgresStatements(t testing.TB, url string, d time.Duration) []string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	dbname := strings.TrimPrefix(u.Path, "/")
	db, err := sql.Open("pgx", PostgresAdminURL())
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	type backend struct{ start, query string }
	sample := func(ctx context.Context) (map[int]backend, map[int]string, error) {
		rows, err := db.QueryContext(ctx, `SELECT pid, COALESCE(backend_start::text, ''), COALESCE(query_start::text, ''),
			application_name || ': ' || left(regexp_replace(query, '\s+', ' ', 'g'), 100)
			FROM pg_stat_activity WHERE datname = $1`, dbname)
		if err != nil {
			return nil, nil, err
		}
		defer rows.Close()
		seen, what := map[int]backend{}, map[int]string{}
		for rows.Next() {
			var pid int
			var b backend
			var q string
			if err := rows.Scan(&pid, &b.start, &b.query, &q); err != nil {
				return nil, nil, err
			}
			seen[pid], what[pid] = b, q
		}
		return seen, what, rows.Err()
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	last, _, err := sample(ctx)
	if err != nil {
		t.Fatalf("testdb: pg_stat_activity: %v", err)
	}
	var out []string
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); {
		<-tick.C
		now, what, err := sample(ctx)
		if err != nil {
			t.Fatalf("testdb: pg_stat_activity: %v", err)
		}
		for pid, b := range now {
			if prev, ok := last[pid]; !ok || prev.start != b.start {
				out = append(out, fmt.Sprintf("pid %d connected, at %s, ran %s", pid, b.query, what[pid]))
			} else if prev.query != b.query {
				out = append(out, fmt.Sprintf("pid %d at %s: %s", pid, b.query, what[pid]))
			}
		}
		last = now
	}
	return out
}
