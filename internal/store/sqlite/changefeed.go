// The change data API's row SQL on SQLite (internal/cdc through
// store/rowsql); the memory dialect's feed runs on an in-memory SQLite
// database and uses it too.

package sqlite

import (
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// RowDialect is SQLite's row SQL.
var RowDialect = rowsql.Dialect{
	Name:            store.SQLite,
	QuoteChar:       `"`,
	InsertReturning: true,
	UpdateReturning: true,
	DeleteReturning: true,
	PrimaryKeyQuery: `SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk`,
	SerialTable:     "CREATE TABLE %s (id INTEGER PRIMARY KEY AUTOINCREMENT, sent_ns INTEGER NOT NULL, payload TEXT NOT NULL)",
}

func init() { rowsql.Register(RowDialect) }
