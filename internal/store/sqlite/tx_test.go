package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
)

// userPool opens the application's own pool on the file (modernc's driver).
func userPool(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestTxConformance(t *testing.T) {
	var files storetest.Where[string]
	storetest.RunTx(t, func(t *testing.T, now func() time.Time) store.Driver {
		path := filepath.Join(t.TempDir(), "tx.db")
		s := openClock(t, path, now)
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return files.Remember(s, path)
	}, storetest.TxOptions{
		Pool:   func(t *testing.T, d store.Driver) *sql.DB { return userPool(t, files.Of(d)) },
		Bare:   func(t *testing.T) *sql.DB { return userPool(t, filepath.Join(t.TempDir(), "bare.db")) },
		Levels: []sql.IsolationLevel{sql.LevelDefault},
	})
}
