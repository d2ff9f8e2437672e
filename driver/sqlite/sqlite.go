package sqlite

import (
	"context"
	"log/slog"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/store/sqlite"
)

func init() {
	open.Register(store.SQLite, func(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error) {
		return sqlite.Open(ctx, db.DSN, sqlite.Options{Logger: log})
	})
}
