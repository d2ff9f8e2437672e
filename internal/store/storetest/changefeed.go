// Conformance of the change feed's part of the contract.

package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
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
