// Decoding of NOTIFY payloads into deltas.
package pgnotify

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/voltro/voltro/internal/cdc/delta"
)

func TestDecode(t *testing.T) {
	ctx := context.Background()
	d, err := Decode(ctx, nil, `{"t":"orders","op":"update","k":{"id":7},"r":{"id":7,"total":12.5,"n":3},"o":{"id":7,"total":10,"n":3}}`)
	if err != nil {
		t.Fatal(err)
	}
	if d.Op != delta.Update || d.Table != "orders" || d.Key["id"] != int64(7) || d.Row["n"] != int64(3) || d.Row["total"] != json.Number("12.5") || d.Old["total"] != int64(10) {
		t.Fatalf("%+v", d)
	}
	if d, err := Decode(ctx, nil, `{"t":"orders","op":"truncate"}`); err != nil || d.Op != delta.Resync {
		t.Fatalf("truncate: %+v %v", d, err)
	}
	if _, err := Decode(ctx, nil, `{"t":"orders","op":"merge"}`); err == nil {
		t.Fatal("unknown op accepted")
	}
}
