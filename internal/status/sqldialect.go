// The SQL that differs between PostgreSQL, MariaDB/MySQL and SQLite for the
// footer's read-only queries: quoting, the window "now minus 5 minutes",
// ages in seconds, and whether a table exists.

package status

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/voltro/voltro/internal/store"
)

// sqlDialect renders neutral SQL: identifiers in double quotes, {recent}
// for "the database clock minus the window", {age:COL} for the age of a
// timestamp column in seconds by the database clock.
type sqlDialect struct {
	name   store.Dialect
	window int // seconds
}

func (d sqlDialect) mysqlFamily() bool { return d.name == store.MariaDB || d.name == store.MySQL }

func (d sqlDialect) sql(q string) string {
	var recent string
	switch {
	case d.name == store.Postgres:
		recent = fmt.Sprintf("(now() - interval '%d seconds')", d.window)
	case d.mysqlFamily():
		recent = fmt.Sprintf("(UTC_TIMESTAMP(3) - INTERVAL %d SECOND)", d.window)
	default:
		recent = fmt.Sprintf("strftime('%%Y-%%m-%%d %%H:%%M:%%f','now','-%d seconds')", d.window)
	}
	q = strings.ReplaceAll(q, "{recent}", recent)
	for {
		i := strings.Index(q, "{age:")
		if i < 0 {
			break
		}
		j := strings.Index(q[i:], "}")
		col := q[i+5 : i+j]
		q = q[:i] + d.age(col) + q[i+j+1:]
	}
	if d.mysqlFamily() {
		q = strings.ReplaceAll(q, `"`, "`")
	}
	return q
}

func (d sqlDialect) age(col string) string {
	switch {
	case d.name == store.Postgres:
		return "EXTRACT(EPOCH FROM (now() - " + col + "))"
	case d.mysqlFamily():
		return "(TIMESTAMPDIFF(MICROSECOND, " + col + ", UTC_TIMESTAMP(3)) / 1000000.0)"
	}
	return "((julianday('now') - julianday(" + col + ")) * 86400.0)"
}

// tableExists reports whether table is in the connection's database.
func (d sqlDialect) tableExists(ctx context.Context, db *sql.DB, table string) (bool, error) {
	var q string
	switch {
	case d.name == store.Postgres:
		q = `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`
	case d.mysqlFamily():
		q = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`
	default:
		q = `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`
	}
	var n int
	if err := db.QueryRowContext(ctx, q, table).Scan(&n); err != nil {
		return false, fmt.Errorf("looking for table %s: %w", table, err)
	}
	return n > 0, nil
}
