// The change data API's row SQL on SQLite (internal/cdc through
// store/rowsql); the memory dialect's feed runs on an in-memory SQLite
// database and uses it too.

package sqlite

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// RowDialect is SQLite's row SQL. The feed's pool on a database file holds
// one connection: one writer at a time is what SQLite allows anyway, and it
// avoids SQLITE_BUSY.
var RowDialect = rowsql.Dialect{
	Name:            store.SQLite,
	QuoteChar:       `"`,
	InsertReturning: true,
	UpdateReturning: true,
	DeleteReturning: true,
	PrimaryKeyQuery: `SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk`,
	SerialTable:     "CREATE TABLE %s (id INTEGER PRIMARY KEY AUTOINCREMENT, sent_ns INTEGER NOT NULL, payload TEXT NOT NULL)",
	Pool: func(path string) (*sql.DB, error) {
		return singlePool("file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	},
}

// MemoryRowDialect is the memory dialect's: SQLite's SQL on a private
// in-memory database per feed, so the data API works the same everywhere.
// One connection keeps the in-memory database alive.
var MemoryRowDialect = func() rowsql.Dialect {
	d := RowDialect
	d.Name = store.Memory
	d.Pool = func(string) (*sql.DB, error) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		return singlePool("file:voltro-mem-" + hex.EncodeToString(b[:]) + "?mode=memory&cache=shared&_pragma=busy_timeout(5000)")
	}
	return d
}()

func singlePool(dsn string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}
