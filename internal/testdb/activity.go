// What is connected to a PostgreSQL test database and what it last ran,
// for a test that measured statements it did not expect to say whose.

package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
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
