package mysql_test

import (
	"database/sql"
	"strings"
	"testing"

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
