// Opening the application pool for each dialect.

package cdc

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// openDB opens the pool for r with its store's dialect d (the memory
// dialect's is a private in-memory SQLite database, so the data API works
// the same everywhere).
func openDB(ctx context.Context, d rowsql.Dialect, r dburl.Resolved) (*sql.DB, error) {
	db, err := d.Pool(r.DSN)
	if err != nil {
		return nil, errs.Wrap(errs.CodeInvalidConfig, err, fmt.Sprintf("open %s database", r.Dialect))
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, errs.Wrap(errs.CodeUnavailable, err, fmt.Sprintf("connect to %s database %s", r.Dialect, dburl.Redact(r.URL)))
	}
	return db, nil
}
