package open

import (
	"context"
	"log/slog"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/store/sqlite"
)

// Open opens the store of cfg.DB.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Driver, error) {
	return DB(ctx, cfg.DB, log)
}

// DB opens the store db names (dburl.Resolve), for callers that have a
// database URL but no whole configuration. It does not migrate.
func DB(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error) {
	switch db.Dialect {
	case store.Memory:
		return memory.New(), nil
	case store.Postgres:
		return postgres.Open(ctx, db.DSN, postgres.Options{Logger: log})
	case store.MariaDB, store.MySQL:
		return mysql.Open(ctx, db.URL, mysql.Options{Dialect: db.Dialect, Logger: log})
	case store.SQLite:
		return sqlite.Open(ctx, db.DSN, sqlite.Options{Logger: log})
	}
	return nil, errs.New(errs.CodeInvalidConfig, "no store for dialect %q", db.Dialect)
}
