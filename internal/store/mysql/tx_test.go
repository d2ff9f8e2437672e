package mysql_test

import (
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

// userPool opens the application's own go-sql-driver pool on database
// name, with a DSN of its own (no parseTime, as many applications have it).
func userPool(t *testing.T, name string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", strings.TrimSuffix(testdb.MariaDBAdminDSN(), "/")+"/"+testdb.DBName(name))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(2)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestTxConformanceMariaDB(t *testing.T) {
	var n atomic.Int32
	var dbs storetest.Where[string]
	storetest.RunTx(t, func(t *testing.T, now func() time.Time) store.Driver {
		name := fmt.Sprintf("mytx%d", n.Add(1))
		s, _ := fresh(t, name, clocked(now))
		return dbs.Remember(s, name)
	}, storetest.TxOptions{
		Pool: func(t *testing.T, d store.Driver) *sql.DB { return userPool(t, dbs.Of(d)) },
		Bare: func(t *testing.T) *sql.DB {
			testdb.MariaDB(t, "mytxbare")
			return userPool(t, "mytxbare")
		},
		Levels:            []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable},
		AwaitSeesRollback: true,
	})
}
