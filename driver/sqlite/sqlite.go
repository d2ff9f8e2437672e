// Package sqlite is the SQLite driver of voltro: importing it lets a
// program open sqlite: databases (one process per file), as importing a
// database/sql driver does. The change feed of the built-in memory store
// also needs it for its data API (an in-memory SQLite database).
//
//	import _ "github.com/voltro/voltro/driver/sqlite"
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
