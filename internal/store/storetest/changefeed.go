// Conformance of the change feed's part of the contract.

package storetest

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// BinlogOffsets runs the subtests of store.BinlogOffsets (stores with a
// binlog feed: MariaDB). open returns offsets on a migrated database.
func BinlogOffsets(t *testing.T, open func(t *testing.T) store.BinlogOffsets) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := open(t)
	t.Run("LoadMissing", func(t *testing.T) {
		if g, ok, err := o.LoadOffset(ctx, "nobody"); err != nil || ok || g != "" {
			t.Fatalf("missing replica: %q %v %v", g, ok, err)
		}
	})
	t.Run("SaveLoadOverwrite", func(t *testing.T) {
		if err := o.SaveOffset(ctx, "r1", 11, "0-1-5"); err != nil {
			t.Fatal(err)
		}
		if err := o.SaveOffset(ctx, "r2", 12, "0-1-6"); err != nil {
			t.Fatal(err)
		}
		if err := o.SaveOffset(ctx, "r1", 13, "0-1-9,1-2-3"); err != nil {
			t.Fatal(err)
		}
		for r, want := range map[string]string{"r1": "0-1-9,1-2-3", "r2": "0-1-6"} {
			if g, ok, err := o.LoadOffset(ctx, r); err != nil || !ok || g != want {
				t.Errorf("%s: %q %v %v, want %q", r, g, ok, err, want)
			}
		}
	})
	t.Run("ServerPosition", func(t *testing.T) {
		if _, err := o.ServerPosition(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// RowSQL runs the subtests of a store's row dialect (store/rowsql) against
// db, a database of that store: key discovery, the three writes with the
// rows they return, re-read by key, and the bench table.
func RowSQL(t *testing.T, db *sql.DB, d rowsql.Dialect) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const table = "voltro_rowsql_conf"
	if err := rowsql.CreateSerialTable(ctx, db, d, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rowsql.DropTable(context.Background(), db, table) })
	var pk []string
	t.Run("PrimaryKey", func(t *testing.T) {
		var err error
		if pk, err = rowsql.PrimaryKey(ctx, db, d, table); err != nil || !slices.Equal(pk, []string{"id"}) {
			t.Fatalf("primary key %v %v", pk, err)
		}
		if none, err := rowsql.PrimaryKey(ctx, db, d, "voltro_rowsql_missing"); err != nil || len(none) != 0 {
			t.Fatalf("missing table: %v %v", none, err)
		}
		if _, err := rowsql.PrimaryKey(ctx, db, d, "bad name"); err == nil {
			t.Fatal("a name that is no identifier was accepted")
		}
	})
	t.Run("InsertUpdateDelete", func(t *testing.T) {
		ins, err := rowsql.Insert(ctx, db, d, pk, table, delta.Row{"sent_ns": int64(5), "payload": "a"})
		if err != nil {
			t.Fatal(err)
		}
		id := ins.Key["id"]
		if ins.Op != delta.Insert || id == nil || delta.Text(ins.Row["payload"]) != "a" {
			t.Fatalf("insert delta %+v", ins)
		}
		up, err := rowsql.Update(ctx, db, d, pk, table, delta.Row{"id": id}, delta.Row{"payload": "b"}, true)
		if err != nil {
			t.Fatal(err)
		}
		if delta.Text(up.Old["payload"]) != "a" || delta.Text(up.Row["payload"]) != "b" || delta.Text(up.Key["id"]) != delta.Text(id) {
			t.Fatalf("update delta %+v", up)
		}
		row, err := rowsql.SelectByKey(ctx, db, d, table, delta.Row{"id": id})
		if err != nil || delta.Text(row["payload"]) != "b" || delta.Text(row["sent_ns"]) != "5" {
			t.Fatalf("re-read %v %v", row, err)
		}
		del, err := rowsql.Delete(ctx, db, d, pk, table, delta.Row{"id": id})
		if err != nil || delta.Text(del.Old["payload"]) != "b" {
			t.Fatalf("delete %+v %v", del, err)
		}
		if row, err := rowsql.SelectByKey(ctx, db, d, table, delta.Row{"id": id}); err != nil || row != nil {
			t.Fatalf("deleted row re-read: %v %v", row, err)
		}
		if _, err := rowsql.Delete(ctx, db, d, pk, table, delta.Row{"id": id}); !errors.Is(err, &errs.Error{Code: errs.CodeNotFound}) {
			t.Fatalf("delete of a missing row: %v", err)
		}
	})
	t.Run("PlainInsert", func(t *testing.T) {
		if _, err := db.ExecContext(ctx, rowsql.PlainInsert(d, table, "sent_ns", "payload"), int64(1), "p"); err != nil {
			t.Fatal(err)
		}
	})
}

// SubscriberLocks runs the subtests of store.SubscriberLocks (stores with
// a trigger feed: PostgreSQL). open returns a new session each call.
func SubscriberLocks(t *testing.T, open func(t *testing.T, name string) store.SubscriberLocks) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("LastSubscriberAlone", func(t *testing.T) {
		a, b := open(t, "a"), open(t, "b")
		for _, l := range []store.SubscriberLocks{a, b} {
			if err := l.HoldShared(ctx, "items"); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.ReleaseShared(ctx, "items"); err != nil {
			t.Fatal(err)
		}
		if alone, err := a.TryExclusive(ctx, "items"); err != nil || alone {
			t.Fatalf("exclusive while b subscribes: %v %v", alone, err)
		}
		if err := b.ReleaseShared(ctx, "items"); err != nil {
			t.Fatal(err)
		}
		if alone, err := a.TryExclusive(ctx, "items"); err != nil || !alone {
			t.Fatalf("exclusive after the last: %v %v", alone, err)
		}
		// a subscriber arriving now waits for the removal to end
		held := make(chan error, 1)
		go func() { held <- b.HoldShared(ctx, "items") }()
		select {
		case err := <-held:
			t.Fatalf("shared lock taken during removal: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if err := a.ReleaseExclusive(ctx, "items"); err != nil {
			t.Fatal(err)
		}
		if err := <-held; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("LocksEndWithTheSession", func(t *testing.T) {
		a, b := open(t, "c"), open(t, "d")
		if err := a.HoldShared(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(ctx); err != nil || !a.IsClosed() {
			t.Fatalf("close: %v, closed %v", err, a.IsClosed())
		}
		if alone, err := b.TryExclusive(ctx, "orders"); err != nil || !alone {
			t.Fatalf("a closed session still holds its lock: %v %v", alone, err)
		}
		if err := b.ReleaseExclusive(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
	})
}
