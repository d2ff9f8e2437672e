// Opening a SQL store from a DB_URL, for the CLI and the test processes; the
// app itself hands NewSQLStore the pool its store driver already opened.
package schedule

import (
	"context"
	"database/sql"
	"fmt"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// OpenURL opens the database named by rawURL (and DB_DIALECT-style dialect,
// may be empty) and returns a store that closes it on Close. The memory store
// has no tables to open: that is CodeInvalidConfig.
func OpenURL(ctx context.Context, rawURL, dialect string) (*SQLStore, error) {
	r, err := dburl.Resolve(rawURL, dialect)
	if err != nil {
		return nil, err
	}
	var driver, dsn string
	switch r.Dialect {
	case store.Postgres:
		driver, dsn = "pgx", r.DSN
	case store.MariaDB, store.MySQL:
		driver, dsn = "mysql", r.DSN
	case store.SQLite:
		driver, dsn = "sqlite", r.DSN+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	default:
		return nil, errs.New(errs.CodeInvalidConfig, "DB_URL names the %s store, whose schedules live only inside the app process", r.Dialect)
	}
	maxConns, err := store.PoolCap(0)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, errs.Wrap(errs.CodeInvalidConfig, err, "open "+dburl.Redact(rawURL))
	}
	if maxConns > 0 && r.Dialect == store.Postgres {
		db.SetMaxOpenConns(maxConns)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, errs.Wrap(errs.CodeUnavailable, fmt.Errorf("ping: %w", err), "open "+dburl.Redact(rawURL))
	}
	s, err := NewSQLStore(db, r.Dialect)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}
