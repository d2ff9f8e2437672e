package postgres

import (
	"context"
	"log/slog"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/store/postgres"
)

func init() {
	open.Register(store.Postgres, func(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error) {
		return postgres.Open(ctx, db.DSN, postgres.Options{Logger: log})
	})
}
