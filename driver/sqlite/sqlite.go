package sqlite

import (
	"context"
	"log/slog"

	"github.com/voltro/voltro/internal/clock"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/store/rowsql"
	"github.com/voltro/voltro/internal/store/sqlite"
)

func init() {
	open.Register(open.Descriptor{
		Dialects: []store.Dialect{store.SQLite},
		Open: func(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error) {
			o := sqlite.Options{Logger: log}
			if c := clock.StoreFrom(ctx); c != nil {
				o.Clock = c.Now // a test environment's virtual clock
			}
			return sqlite.Open(ctx, db.DSN, o)
		},
		// The in-process bus carries the feed; the memory store's data API
		// writes SQLite on a private in-memory database.
		Rows: map[store.Dialect]rowsql.Dialect{store.SQLite: sqlite.RowDialect, store.Memory: sqlite.MemoryRowDialect},
	})
}
