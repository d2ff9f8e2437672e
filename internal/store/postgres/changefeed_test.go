package postgres_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestRowSQL(t *testing.T) {
	s := open(t, testdb.Postgres(t, "pgrowsql"))
	storetest.RowSQL(t, s.DB(), postgres.RowDialect)
}

// The trigger version table comes from migration 0500, also on a database
// where an earlier version created it at run time; the triggers install,
// list and go again through the store.
func TestChangeTriggers(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgcdctrig")
	raw, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		// what cdc/pgnotify ran before migration 0500 existed
		`CREATE TABLE IF NOT EXISTS _voltro_cdc_schema (component text PRIMARY KEY, version int NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO _voltro_cdc_schema (component, version) VALUES ('pg_notify', 2)`,
		`CREATE TABLE items (id bigserial PRIMARY KEY, name text)`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, url) // migrates over the run-time table
	db := s.DB()
	var v int
	if err := db.QueryRowContext(ctx, `SELECT version FROM _voltro_cdc_schema WHERE component = 'pg_notify'`).Scan(&v); err != nil || v != 2 {
		t.Fatalf("old row after migrate: %d %v", v, err)
	}
	if err := postgres.PrepareChangeTriggers(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := postgres.InstallChangeTrigger(ctx, db, "items", []string{"id"}); err != nil {
		t.Fatal(err)
	}
	if got, err := postgres.ChangeTriggers(ctx, db, "items"); err != nil || !slices.Equal(got, []string{"_voltro_cdc_trunc_v2", "_voltro_cdc_v2"}) {
		t.Fatalf("triggers %v %v", got, err)
	}
	if err := postgres.RemoveChangeTrigger(ctx, db, "items"); err != nil {
		t.Fatal(err)
	}
	if got, err := postgres.ChangeTriggers(ctx, db, "items"); err != nil || len(got) != 0 {
		t.Fatalf("after removal %v %v", got, err)
	}
	if err := postgres.RemoveChangeTrigger(ctx, db, "gone"); err != nil {
		t.Fatalf("removal from a missing table: %v", err)
	}

	// a database without the engine's migrations: Prepare applies 0500 alone
	bare := testdb.Postgres(t, "pgcdcbare")
	bdb, err := sql.Open("pgx", bare)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if err := postgres.PrepareChangeTriggers(ctx, bdb); err != nil {
		t.Fatal(err)
	}
	if _, err := bdb.ExecContext(ctx, `CREATE TABLE items (id bigserial PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if err := postgres.InstallChangeTrigger(ctx, bdb, "items", []string{"id"}); err != nil {
		t.Fatal(err)
	}
}

func TestSubscriberLocks(t *testing.T) {
	url := testdb.Postgres(t, "pgcdclocks")
	storetest.SubscriberLocks(t, func(t *testing.T, name string) store.SubscriberLocks {
		l, err := postgres.OpenSubscriberLocks(ctxT(t), url, "voltro-test-"+name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close(context.Background()) })
		return l
	})
}
