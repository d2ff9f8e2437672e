package postgres_test

import (
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the application's own pool: pgx's database/sql driver

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

// userPool opens the application's own database/sql pool on url, as an
// application sharing DB_URL with voltro would.
func userPool(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(2)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestTxConformance(t *testing.T) {
	var n atomic.Int32
	var dbs storetest.Where[string]
	storetest.RunTx(t, func(t *testing.T, now func() time.Time) store.Driver {
		url := testdb.Postgres(t, fmt.Sprintf("pgtx%d", n.Add(1)))
		return dbs.Remember(openClock(t, url, now), url)
	}, storetest.TxOptions{
		Pool:   func(t *testing.T, d store.Driver) *sql.DB { return userPool(t, dbs.Of(d)) },
		Bare:   func(t *testing.T) *sql.DB { return userPool(t, testdb.Postgres(t, "pgtxbare")) },
		Levels: []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable},
	})
}
