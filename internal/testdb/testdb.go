package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/voltro/voltro/internal/config"
)

// PostgresAdminURL is the server the tests use (VOLTRO_TEST_POSTGRES_URL).
func PostgresAdminURL() string {
	if u := config.TestSetting(config.EnvTestPostgresURL); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// MariaDBAdminDSN is the server the tests use, in go-sql-driver form
// (VOLTRO_TEST_MARIADB_DSN).
func MariaDBAdminDSN() string {
	if u := config.TestSetting(config.EnvTestMariaDBDSN); u != "" {
		return u
	}
	return "root@tcp(127.0.0.1:3306)/"
}

// Postgres drops and recreates database DBName(name) and returns its URL.
// The database is dropped again when t ends, if t passed.
func Postgres(t testing.TB, name string) string {
	t.Helper()
	dbname := DBName(name)
	admin(t, "pgx", PostgresAdminURL(), func(ctx context.Context, db *sql.DB) {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, dbname)); err != nil {
			t.Fatalf("testdb: PostgreSQL at %s does not answer (run scripts/test to start it): %v", PostgresAdminURL(), err)
		}
		if _, err := db.ExecContext(ctx, `CREATE DATABASE `+dbname); err != nil {
			t.Fatalf("testdb: create %s: %v", dbname, err)
		}
	})
	dropOnPass(t, "pgx", PostgresAdminURL(), `DROP DATABASE IF EXISTS `+dbname+` WITH (FORCE)`)
	return postgresURL(t, dbname)
}

// admin runs fn on an admin connection of driver to dsn, bounded to 30 s.
func admin(t testing.TB, driver, dsn string, fn func(ctx context.Context, db *sql.DB)) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fn(ctx, db)
}

// postgresURL is PostgresAdminURL with its database replaced by dbname, so a
// VOLTRO_TEST_POSTGRES_URL naming another server is used for every test
// database too.
func postgresURL(t testing.TB, dbname string) string {
	t.Helper()
	u, err := url.Parse(PostgresAdminURL())
	if err != nil {
		t.Fatalf("testdb: VOLTRO_TEST_POSTGRES_URL: %v", err)
	}
	u.Path = "/" + dbname
	return u.String()
}

// MariaDB drops and recreates database DBName(name) and returns a
// mariadb:// URL for it. The database is dropped again when t ends, if t
// passed.
func MariaDB(t testing.TB, name string) string {
	t.Helper()
	dbname := DBName(name)
	admin(t, "mysql", MariaDBAdminDSN(), func(ctx context.Context, db *sql.DB) {
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+dbname); err != nil {
			t.Fatalf("testdb: MariaDB at %s does not answer (run scripts/test to start it): %v", MariaDBAdminDSN(), err)
		}
		if _, err := db.ExecContext(ctx, "CREATE DATABASE "+dbname); err != nil {
			t.Fatalf("testdb: create %s: %v", dbname, err)
		}
	})
	dropOnPass(t, "mysql", MariaDBAdminDSN(), "DROP DATABASE IF EXISTS "+dbname)
	return "mariadb://root@127.0.0.1:3306/" + dbname
}

// PostgresKept returns the URL of database voltro_keep_<name>, creating
// it if it does not exist and otherwise leaving it as it is: for
// benchmarks whose seeded data (a million runs) outlives one run.
func PostgresKept(t testing.TB, name string) string {
	t.Helper()
	dbname := "voltro_keep_" + name
	admin(t, "pgx", PostgresAdminURL(), func(ctx context.Context, db *sql.DB) {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, dbname).Scan(&n); err != nil {
			t.Fatalf("testdb: PostgreSQL at %s does not answer (run scripts/test to start it): %v", PostgresAdminURL(), err)
		}
		if n == 0 {
			if _, err := db.ExecContext(ctx, `CREATE DATABASE `+dbname); err != nil {
				t.Fatalf("testdb: create %s: %v", dbname, err)
			}
		}
	})
	return postgresURL(t, dbname)
}

// MariaDBKept is PostgresKept on MariaDB: a mariadb:// URL of database
// voltro_keep_<name>, created if missing, never emptied.
func MariaDBKept(t testing.TB, name string) string {
	t.Helper()
	dbname := "voltro_keep_" + name
	admin(t, "mysql", MariaDBAdminDSN(), func(ctx context.Context, db *sql.DB) {
		if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+dbname); err != nil {
			t.Fatalf("testdb: MariaDB at %s: create %s: %v", MariaDBAdminDSN(), dbname, err)
		}
	})
	return "mariadb://root@127.0.0.1:3306/" + dbname
}
