// Conformance and SQLite-specific tests of the store driver.

package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/sqlite"
	"github.com/voltro/voltro/internal/store/storetest"
)

// quiet drops the store's log lines in tests.
var quiet = slog.New(slog.DiscardHandler)

// openTest opens and migrates a store on path, closed at the end of t.
func openTest(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	return openClock(t, path, nil)
}

// openClock is openTest on the clock now (nil: time.Now).
func openClock(t testing.TB, path string, now func() time.Time) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{Logger: quiet, Clock: now})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T, now func() time.Time) store.Driver {
		return openClock(t, filepath.Join(t.TempDir(), "voltro.db"), now)
	}, storetest.Options{
		Reopen: func(t *testing.T, d store.Driver, now func() time.Time) store.Driver {
			return openClock(t, d.(*sqlite.Store).Path(), now)
		},
		Modes:    []store.LockMode{store.LockRow},
		Parallel: true,
		Tx: storetest.TxOptions{
			Pool:   func(t *testing.T, d store.Driver) *sql.DB { return userPool(t, d.(*sqlite.Store).Path()) },
			Bare:   func(t *testing.T) *sql.DB { return userPool(t, filepath.Join(t.TempDir(), "bare.db")) },
			Levels: []sql.IsolationLevel{sql.LevelDefault},
		},
	})
}

func TestMigrationsRecordedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s := openTest(t, path)
	ctx := context.Background()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	s2 := openTest(t, path) // a second handle migrates again: a no-op
	got, err := s2.AppliedMigrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		want = append(want, filepath.Base(f[:len(f)-len(".sql")]))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("applied %v, want every file in order %v", got, want)
	}
}

func TestPragmas(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "p.db"))
	ctx := context.Background()
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "synchronous": "1"} {
		var got string
		if err := s.DB().QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}

func TestLockModes(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "l.db"))
	ctx := context.Background()
	for _, req := range []store.LockMode{store.LockAuto, store.LockAdvisory, store.LockRow} {
		mode, reason, err := s.ResolveLockMode(ctx, req)
		if err != nil || mode != store.LockRow || reason == "" {
			t.Fatalf("%s: mode=%s reason=%q err=%v", req, mode, reason, err)
		}
	}
	_, _, err := s.ResolveLockMode(ctx, "gossip")
	if !errors.Is(err, errs.ErrInvalidConfig) || !containsAll(err.Error(), "auto", "row", "advisory") {
		t.Fatalf("unknown mode: %v", err)
	}
	if _, err := s.NewLocker(ctx, store.LockAdvisory, "a:1"); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("advisory locker: want invalid_argument, got %v", err)
	}
}

func TestLockerCloseReleasesLeases(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "c.db"))
	ctx := context.Background()
	a, err := s.NewLocker(ctx, store.LockRow, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	e1, ok, err := a.Acquire(ctx, "default/1", time.Hour)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := s.NewLocker(ctx, store.LockRow, "b:1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e2, ok, err := b.Acquire(ctx, "default/1", time.Hour)
	if err != nil || !ok || e2 <= e1 {
		t.Fatalf("a closed locker must free its lease at once: ok=%v epoch=%d err=%v", ok, e2, err)
	}
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "x.db"))
	ctx := context.Background()
	l, err := s.NewLocker(ctx, store.LockRow, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("ping after close: %v", err)
	}
	if _, _, err := l.Acquire(ctx, "s", time.Second); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("locker after store close: %v", err)
	}
}

func TestOpenRejectsNonFiles(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db?mode=memory"} {
		if _, err := sqlite.Open(context.Background(), p, sqlite.Options{}); !errors.Is(err, errs.ErrInvalidConfig) {
			t.Errorf("Open(%q): want invalid_config, got %v", p, err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "junk.db"), []byte("this is not a sqlite database, just some text long enough to matter......................................................................"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "junk.db"), sqlite.Options{})
	if err == nil {
		err = s.Migrate(context.Background())
		_ = s.Close()
	}
	if err == nil {
		t.Fatalf("a file that is not a database must fail")
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
