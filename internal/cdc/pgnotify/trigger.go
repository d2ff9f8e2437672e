// The change triggers' life on a table: install, removal, listing. Their
// SQL is the PostgreSQL store's (store/postgres changetriggers.go).

package pgnotify

import (
	"context"
	"database/sql"

	"github.com/voltro/voltro/internal/store/postgres"
)

// Version of the trigger function (postgres.CDCVersion).
const Version = postgres.CDCVersion

// Channel is the one NOTIFY channel every voltro trigger of this Version
// publishes on.
const Channel = postgres.CDCChannel

// PayloadLimit is the size above which a trigger sends a resync instead of
// the key.
const PayloadLimit = postgres.CDCPayloadLimit

// Install makes sure table publishes its changes (idempotent, safe from many
// instances at once). pk lists the primary-key columns. On a database the
// engine's migrations have not run on, it first applies the store's
// migration of the trigger version table.
func Install(ctx context.Context, db *sql.DB, table string, pk []string) error {
	if err := postgres.PrepareChangeTriggers(ctx, db); err != nil {
		return err
	}
	return postgres.InstallChangeTrigger(ctx, db, table, pk)
}

// Uninstall removes the change triggers (of every version) from table. The
// caller makes sure no instance still subscribes.
func Uninstall(ctx context.Context, db *sql.DB, table string) error {
	return postgres.RemoveChangeTrigger(ctx, db, table)
}

// Triggers lists the voltro change triggers (of any version) on table, for
// tests and diagnostics.
func Triggers(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	return postgres.ChangeTriggers(ctx, db, table)
}
