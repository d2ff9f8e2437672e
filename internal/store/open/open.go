package open

import (
	"context"
	"log/slog"
	"sort"
	"sync"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
)

// Opener opens the store db names. It does not migrate.
type Opener func(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error)

var (
	mu      sync.RWMutex
	openers = map[store.Dialect]Opener{
		store.Memory: func(context.Context, dburl.Resolved, *slog.Logger) (store.Driver, error) { return memory.New(), nil },
	}
)

// Register makes o the opener of dialect. Driver packages call it from
// init; registering a dialect twice panics, as sql.Register does.
func Register(dialect store.Dialect, o Opener) {
	mu.Lock()
	defer mu.Unlock()
	if o == nil {
		panic("voltro: Register opener is nil")
	}
	if _, dup := openers[dialect]; dup {
		panic("voltro: Register called twice for dialect " + string(dialect))
	}
	openers[dialect] = o
}

// Dialects lists the dialects a store can be opened for in this program.
func Dialects() []store.Dialect {
	mu.RLock()
	defer mu.RUnlock()
	ds := make([]store.Dialect, 0, len(openers))
	for d := range openers {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds
}

// DriverImport is the import path of the driver package of dialect, "" for
// the built-in memory store and dialects voltro has no driver for.
func DriverImport(dialect store.Dialect) string {
	switch dialect {
	case store.Postgres:
		return "github.com/voltro/voltro/driver/postgres"
	case store.MariaDB, store.MySQL:
		return "github.com/voltro/voltro/driver/mysql"
	case store.SQLite:
		return "github.com/voltro/voltro/driver/sqlite"
	}
	return ""
}

// Missing is the error for a database whose driver the program did not
// import: it names the URL (redacted) and the import to add.
func Missing(db dburl.Resolved) error {
	url := dburl.Redact(db.URL)
	if url == "" {
		url = string(db.Dialect) + ":"
	}
	if imp := DriverImport(db.Dialect); imp != "" {
		return errs.New(errs.CodeInvalidConfig, "no driver for %q (dialect %s): import _ %q", url, db.Dialect, imp)
	}
	return errs.New(errs.CodeInvalidConfig, "no store for dialect %q (%q)", db.Dialect, url)
}

// Open opens the store of cfg.DB.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Driver, error) {
	return DB(ctx, cfg.DB, log)
}

// DB opens the store db names (dburl.Resolve), for callers that have a
// database URL but no whole configuration. It does not migrate.
func DB(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error) {
	mu.RLock()
	o := openers[db.Dialect]
	mu.RUnlock()
	if o == nil {
		return nil, Missing(db)
	}
	return o(ctx, db, log)
}
