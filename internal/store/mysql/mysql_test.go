// Conformance of the MariaDB/MySQL store against the real server.
package mysql_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

// quiet logs only warnings and errors.
var quiet = mysql.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}

// clocked is quiet on the clock now (nil: the server's clock).
func clocked(now func() time.Time) mysql.Options {
	o := quiet
	o.Clock = now
	return o
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// open opens url and closes the store when t ends.
func open(t testing.TB, url string, opts mysql.Options) *mysql.Store {
	t.Helper()
	s, err := mysql.Open(ctxT(t), url, opts)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fresh recreates database name and returns a migrated store on it.
func fresh(t testing.TB, name string, opts mysql.Options) (*mysql.Store, string) {
	t.Helper()
	url := testdb.MariaDB(t, name)
	s := open(t, url, opts)
	if err := s.Migrate(ctxT(t)); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s, url
}

func TestConformanceMariaDB(t *testing.T) {
	var url string
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Driver {
		var s *mysql.Store
		s, url = fresh(t, "mysuite", clocked(now))
		return s
	}, storetest.Options{
		Reopen: func(t *testing.T, _ store.Driver, now func() time.Time) store.Driver {
			return open(t, url, clocked(now))
		},
		Modes: []store.LockMode{store.LockRow, store.LockAdvisory},
	})
}

// The mysql dialect keeps to what MySQL 8 has: LastInsertId instead of
// INSERT … RETURNING. Run against the same server, and with multi-statement
// queries off, it covers those paths (and Complete as a plain transaction).
func TestConformanceMySQLDialect(t *testing.T) {
	var url string
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Driver {
		u := testdb.MariaDB(t, "mysuite_my")
		url = "mysql://" + strings.TrimPrefix(u, "mariadb://") + "?multiStatements=false"
		s := open(t, url, clocked(now))
		if s.Dialect() != store.MySQL {
			t.Fatalf("dialect %s", s.Dialect())
		}
		if err := s.Migrate(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{
		Reopen: func(t *testing.T, _ store.Driver, now func() time.Time) store.Driver {
			return open(t, url, clocked(now))
		},
		Modes: []store.LockMode{store.LockRow, store.LockAdvisory},
	})
}
