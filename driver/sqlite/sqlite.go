package sqlite

import (
	"context"
	"log/slog"

	"github.com/voltro/voltro/internal/clock"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/store/sqlite"
)

func init() {
	open.Register(store.SQLite, func(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error) {
		o := sqlite.Options{Logger: log}
		if c := clock.StoreFrom(ctx); c != nil {
			o.Clock = c.Now // a test environment's virtual clock
		}
		return sqlite.Open(ctx, db.DSN, o)
	})
}
