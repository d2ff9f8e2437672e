// Opening the application pool for each dialect.

package cdc

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// openDB opens the pool for r. The memory dialect gets a private in-memory
// SQLite database, so the data API works the same everywhere.
func openDB(ctx context.Context, r dburl.Resolved) (*sql.DB, error) {
	var (
		driver, dsn string
		single      bool
	)
	switch r.Dialect {
	case store.Postgres:
		driver, dsn = "pgx", r.DSN
	case store.MariaDB, store.MySQL:
		driver, dsn = "mysql", r.DSN
	case store.SQLite:
		driver, dsn, single = "sqlite", "file:"+r.DSN+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)", true
	default:
		var b [8]byte
		_, _ = rand.Read(b[:])
		driver, single = "sqlite", true
		dsn = "file:voltro-mem-" + hex.EncodeToString(b[:]) + "?mode=memory&cache=shared&_pragma=busy_timeout(5000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, errs.Wrap(errs.CodeInvalidConfig, err, fmt.Sprintf("open %s database", r.Dialect))
	}
	if single {
		// one writer at a time is what SQLite allows anyway; one connection
		// also keeps an in-memory database alive and avoids SQLITE_BUSY
		db.SetMaxOpenConns(1)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, errs.Wrap(errs.CodeUnavailable, err, fmt.Sprintf("connect to %s database %s", r.Dialect, dburl.Redact(r.URL)))
	}
	return db, nil
}
