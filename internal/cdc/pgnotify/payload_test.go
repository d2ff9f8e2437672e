// Decoding of NOTIFY payloads into notes, and what Resolve refuses without
// touching the database.
package pgnotify

import (
	"context"
	"errors"
	"testing"

	"github.com/voltro/voltro/internal/cdc/delta"
)

func TestParse(t *testing.T) {
	n, err := Parse(`{"t":"orders","op":"update","k":{"id":7},"ok":{"id":6},"ts":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if n.Op != "update" || n.Table != "orders" || n.Key["id"] != int64(7) || n.OldKey["id"] != int64(6) {
		t.Fatalf("%+v", n)
	}
	for _, raw := range []string{`{"t":"orders","op":"truncate"}`, `{"t":"orders","op":"resync"}`} {
		if n, err := Parse(raw); err != nil || n.Op != string(delta.Resync) {
			t.Fatalf("%s: %+v %v", raw, n, err)
		}
	}
	for _, raw := range []string{`{"t":"orders","op":"merge"}`, `{"t":"x; DROP TABLE y","op":"insert"}`, `not json`} {
		if _, err := Parse(raw); err == nil {
			t.Fatalf("%s accepted", raw)
		}
	}
}

// A key that is not the table's primary key is refused before any read (a
// nil Querier would panic if Resolve read).
func TestResolveRefusesForeignKeyColumns(t *testing.T) {
	ctx := context.Background()
	pk := []string{"id"}
	for _, n := range []Note{
		{Table: "users", Op: "update", Key: delta.Row{"pw_hash": "x"}},
		{Table: "users", Op: "delete", Key: delta.Row{"id": int64(1), "pw_hash": "x"}},
		{Table: "users", Op: "insert", Key: delta.Row{}},
		{Table: "users", Op: "delete", Key: delta.Row{"id": int64(1)}, OldKey: delta.Row{"id": int64(2)}},
	} {
		var rej *Rejected
		if _, err := Resolve(ctx, nil, n, pk); !errors.As(err, &rej) {
			t.Errorf("%+v: %v, want Rejected", n, err)
		}
	}
	ds, err := Resolve(ctx, nil, Note{Table: "t", Op: "insert", Key: delta.Row{}}, nil)
	if err != nil || len(ds) != 1 || ds[0].Op != delta.Resync {
		t.Fatalf("keyless table: %+v %v", ds, err)
	}
}
