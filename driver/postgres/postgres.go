package postgres

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"

	"github.com/voltro/voltro/internal/cdc/cdcdriver"
	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/cdc/pgnotify"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/store/rowsql"
)

func init() {
	open.Register(open.Descriptor{
		Dialects: []store.Dialect{store.Postgres},
		Open: func(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error) {
			return postgres.Open(ctx, db.DSN, postgres.Options{Logger: log})
		},
		Notify: &cdcdriver.Notify{
			Listen: func(l cdcdriver.Listener) cdcdriver.Runner {
				pl := &pgnotify.Listener{URL: l.DSN, ReplicaID: l.ReplicaID, Logger: l.Logger, OnNotify: l.OnNotify, OnGap: l.OnGap}
				return pl.Run
			},
			Parse: func(payload string) (cdcdriver.Note, error) {
				n, err := pgnotify.Parse(payload)
				return cdcdriver.Note{Table: n.Table, Impl: n}, err
			},
			Resolve: func(ctx context.Context, db *sql.DB, n cdcdriver.Note, pk []string) ([]delta.Delta, error) {
				return pgnotify.Resolve(ctx, db, n.Impl.(pgnotify.Note), pk)
			},
			Rejected: func(err error) bool {
				var rej *pgnotify.Rejected
				return errors.As(err, &rej)
			},
			Install:   pgnotify.Install,
			Uninstall: pgnotify.Uninstall,
			Locks:     postgres.OpenSubscriberLocks,
		},
		Rows: map[store.Dialect]rowsql.Dialect{store.Postgres: postgres.RowDialect},
	})
}
