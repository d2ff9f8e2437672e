package mysql

import (
	"context"
	"log/slog"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/open"
)

func init() {
	for _, d := range []store.Dialect{store.MariaDB, store.MySQL} {
		open.Register(d, func(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error) {
			return mysql.Open(ctx, db.URL, mysql.Options{Dialect: db.Dialect, Logger: log})
		})
	}
}
