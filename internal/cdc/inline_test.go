// Inline emit and the in-process bus on memory, SQLite, PostgreSQL with CDC=0, and MySQL.
package cdc

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/testdb"
)

// The data API publishes after commit, nothing for a rollback, filters
// apply, and the transport label is the one the boot log shows.
func TestInlineEmit(t *testing.T) {
	mysqlURL := strings.Replace(testdb.MariaDB(t, "cdcinline"), "mariadb://", "mysql://", 1)
	cases := []struct {
		name, url string
		disable   bool
		want      Transport
		returning string // the boot line's RETURNING part
	}{
		{"memory", "memory:", false, Bus, ""},
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "app.db"), false, Bus, ", RETURNING: native (INSERT/UPDATE/DELETE)"},
		{"postgres CDC=0", testdb.Postgres(t, "cdcinline"), true, Inline, ", RETURNING: native (INSERT/UPDATE/DELETE)"},
		{"mysql", mysqlURL, false, Inline, ", RETURNING: none; each write then SELECT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := open(t, Config{URL: c.url, ReplicaID: "a", DisableCDC: c.disable})
			if f.Transport() != c.want {
				t.Fatalf("transport %s, want %s", f.Transport(), c.want)
			}
			if !strings.HasPrefix(f.BootLine(), "sql dialect resolved: "+string(f.Dialect())+" — CDC: ") || !strings.HasSuffix(f.BootLine(), c.returning) ||
				(c.returning == "" && strings.Contains(f.BootLine(), "RETURNING")) {
				t.Fatalf("boot line %q", f.BootLine())
			}
			exerciseWrites(t, f, f, "items")
		})
	}
}

// exerciseWrites writes through w and checks what subscribers of r see.
func exerciseWrites(t *testing.T, w, r *Feed, table string) {
	ctx := context.Background()
	mustExec(t, w, "DROP TABLE IF EXISTS "+table, itemsDDL(w.Dialect(), table))
	all := subscribe(t, r, table, nil)
	paid := subscribe(t, r, table, delta.Filter{"status": "paid"})
	const wait = 5 * time.Second

	row, err := w.Insert(ctx, table, delta.Row{"name": "a"})
	if err != nil {
		t.Fatal(err)
	}
	d := next(t, all, wait)
	if d.Op != delta.Insert || d.Table != table || id(d.Key) != id(row) || d.Row["status"] != "new" || d.Row["name"] != "a" {
		t.Fatalf("insert delta %+v (row %v)", d, row)
	}

	if _, err := w.Update(ctx, table, delta.Row{"id": id(row)}, delta.Row{"status": "paid"}); err != nil {
		t.Fatal(err)
	}
	d = next(t, all, wait)
	if d.Op != delta.Update || d.Row["status"] != "paid" || id(d.Key) != id(row) {
		t.Fatalf("update delta %+v", d)
	}
	if d.Old != nil && d.Old["status"] != "new" {
		t.Fatalf("update old row %+v", d.Old)
	}
	if d := next(t, paid, wait); d.Op != delta.Update || d.Row["status"] != "paid" {
		t.Fatalf("filtered subscriber got %+v", d)
	}

	// a rolled-back transaction emits nothing
	boom := errors.New("boom")
	err = w.Tx(ctx, func(tx *Tx) error {
		if _, err := tx.Insert(ctx, table, delta.Row{"name": "rolled back", "status": "paid"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("tx error %v", err)
	}

	// two writes in one transaction arrive in order, after commit
	err = w.Tx(ctx, func(tx *Tx) error {
		if _, err := tx.Insert(ctx, table, delta.Row{"name": "b"}); err != nil {
			return err
		}
		_, err := tx.Insert(ctx, table, delta.Row{"name": "c"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := next(t, all, wait); d.Row["name"] != "b" {
		t.Fatalf("want b (the rolled-back row must not appear), got %+v", d)
	}
	if d := next(t, all, wait); d.Row["name"] != "c" {
		t.Fatalf("want c, got %+v", d)
	}

	if _, err := w.Delete(ctx, table, delta.Row{"id": id(row)}); err != nil {
		t.Fatal(err)
	}
	d = next(t, all, wait)
	if d.Op != delta.Delete || id(d.Key) != id(row) || d.Row != nil {
		t.Fatalf("delete delta %+v", d)
	}
	if d.Old != nil && d.Old["status"] != "paid" {
		t.Fatalf("delete old row %+v", d.Old)
	}
	if d := next(t, paid, wait); d.Op != delta.Delete {
		t.Fatalf("filtered subscriber: want the delete of a paid row, got %+v", d)
	}
	if _, err := w.Delete(ctx, table, delta.Row{"id": id(row)}); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("deleting a missing row: %v", err)
	}
	quiet(t, paid, 150*time.Millisecond)
	quiet(t, all, 50*time.Millisecond)
}
