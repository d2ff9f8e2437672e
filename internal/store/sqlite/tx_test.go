package sqlite_test

import (
	"database/sql"
	"testing"
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
