// The change feed's LISTEN/NOTIFY transport, registered for the feed.

package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/voltro/voltro/internal/cdc/cdcdriver"
	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/cdc/pgnotify"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/postgres"
)

func init() {
	cdcdriver.RegisterNotify(store.Postgres, cdcdriver.Notify{
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
	})
}
