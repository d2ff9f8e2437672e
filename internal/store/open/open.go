// Package open opens the store a configuration names, by dialect.
package open

import (
	"context"
	"log/slog"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/store/sqlite"
)

// Open opens the store of cfg.DB.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Driver, error) {
	switch cfg.DB.Dialect {
	case store.Memory:
		return memory.New(), nil
	case store.Postgres:
		return postgres.Open(ctx, cfg.DB.DSN, postgres.Options{Logger: log})
	case store.MariaDB, store.MySQL:
		return mysql.Open(ctx, cfg.DB.URL, mysql.Options{Dialect: cfg.DB.Dialect, Logger: log})
	case store.SQLite:
		return sqlite.Open(ctx, cfg.DB.DSN, sqlite.Options{Logger: log})
	}
	return nil, errs.New(errs.CodeInvalidConfig, "no store for dialect %q", cfg.DB.Dialect)
}
