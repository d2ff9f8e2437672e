package open

import (
	"context"
	"log/slog"
	"sort"
	"sync"

	"github.com/voltro/voltro/internal/cdc/cdcdriver"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// Opener opens the store db names. It does not migrate.
type Opener func(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error)

// Descriptor is everything a database's driver package brings, registered
// once: the dialects it serves, how to open its store, and the change
// feed's transport for it, if it has one of its own.
type Descriptor struct {
	Dialects []store.Dialect
	Open     Opener
	// Notify is the LISTEN/NOTIFY transport (PostgreSQL), Binlog the
	// binlog reader (MariaDB); nil where the database has neither, and the
	// feed emits inline.
	Notify *cdcdriver.Notify
	Binlog *cdcdriver.Binlog
	// Rows is the row SQL of the change feed's data API, per dialect
	// (SQLite's driver also brings the memory store's: SQLite on a
	// private in-memory database).
	Rows map[store.Dialect]rowsql.Dialect
}

var (
	mu          sync.RWMutex
	descriptors = map[store.Dialect]*Descriptor{
		store.Memory: {Dialects: []store.Dialect{store.Memory}, Open: func(context.Context, dburl.Resolved, *slog.Logger) (store.Driver, error) { return memory.New(), nil }},
	}
)

// Register makes d the descriptor of each of its dialects. Driver packages
// call it from init, once; registering a dialect twice panics, as
// sql.Register does.
func Register(d Descriptor) {
	mu.Lock()
	defer mu.Unlock()
	if d.Open == nil || len(d.Dialects) == 0 {
		panic("voltro: Register needs an opener and at least one dialect")
	}
	for _, dialect := range d.Dialects {
		if _, dup := descriptors[dialect]; dup {
			panic("voltro: Register called twice for dialect " + string(dialect))
		}
		descriptors[dialect] = &d
	}
}

// Of is the descriptor registered for dialect, nil if the program imports
// no driver for it.
func Of(dialect store.Dialect) *Descriptor {
	mu.RLock()
	defer mu.RUnlock()
	return descriptors[dialect]
}

// Rows is the row SQL registered for dialect.
func Rows(dialect store.Dialect) (rowsql.Dialect, error) {
	mu.RLock()
	defer mu.RUnlock()
	for _, d := range descriptors {
		if r, ok := d.Rows[dialect]; ok {
			return r, nil
		}
	}
	return rowsql.Dialect{}, errs.New(errs.CodeInvalidConfig, "no row SQL for dialect %q: its driver package is not imported", dialect)
}

// Dialects lists the dialects a store can be opened for in this program.
func Dialects() []store.Dialect {
	mu.RLock()
	defer mu.RUnlock()
	ds := make([]store.Dialect, 0, len(descriptors))
	for d := range descriptors {
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
	d := Of(db.Dialect)
	if d == nil {
		return nil, Missing(db)
	}
	return d.Open(ctx, db, log)
}
