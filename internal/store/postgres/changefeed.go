// The change feed's SQL on PostgreSQL (internal/cdc): the row SQL of the
// change data API, and the keys-only notify triggers with the advisory
// locks that tell instances whether anyone still subscribes.

package postgres

import (
	"database/sql"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// RowDialect is PostgreSQL's row SQL.
var RowDialect = rowsql.Dialect{
	Name:            store.Postgres,
	QuoteChar:       `"`,
	Numbered:        true,
	InsertReturning: true,
	UpdateReturning: true,
	DeleteReturning: true,
	ForUpdate:       " FOR UPDATE",
	PrimaryKeyQuery: `SELECT a.attname FROM pg_index i
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
			WHERE i.indrelid = to_regclass($1) AND i.indisprimary
			ORDER BY array_position(i.indkey::int2[], a.attnum)`,
	QuotedTableArg: true,
	SerialTable:    "CREATE TABLE %s (id bigserial PRIMARY KEY, sent_ns bigint NOT NULL, payload varchar(64) NOT NULL)",
	Pool:           func(dsn string) (*sql.DB, error) { return sql.Open("pgx", dsn) },
}
