// Conformance of the MariaDB/MySQL store against the real server.
package mysql_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store/mysql"
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
