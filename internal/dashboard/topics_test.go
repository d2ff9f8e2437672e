package dashboard

// Which changes of the Cluster panel's tables are worth a collection.

import (
	"testing"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/store"
)

func TestClusterMatters(t *testing.T) {
	lease := func(owner string, epoch int64) delta.Row {
		return delta.Row{"shard": "default/0", "owner": owner, "epoch": epoch}
	}
	for _, c := range []struct {
		what string
		dl   delta.Delta
		want bool
	}{
		{"an instance joins", delta.Delta{Op: delta.Insert, Table: store.TableRunners}, true},
		{"an instance leaves", delta.Delta{Op: delta.Delete, Table: store.TableRunners}, true},
		{"a heartbeat", delta.Delta{Op: delta.Update, Table: store.TableRunners}, false},
		{"a renewal (binlog images)", delta.Delta{Op: delta.Update, Table: store.TableShardLocks, Row: lease("a", 3), Old: lease("a", 3)}, false},
		{"a shard changes hands", delta.Delta{Op: delta.Update, Table: store.TableShardLocks, Row: lease("b", 4), Old: lease("a", 3)}, true},
		{"a shard update, keys only (NOTIFY)", delta.Delta{Op: delta.Update, Table: store.TableShardLocks}, true},
		{"uncomparable values", delta.Delta{Op: delta.Update, Table: store.TableShardLocks,
			Row: delta.Row{"owner": []byte("a"), "epoch": int64(1)}, Old: delta.Row{"owner": []byte("a"), "epoch": int64(1)}}, false},
	} {
		if got := clusterMatters(c.dl); got != c.want {
			t.Errorf("%s: %v, want %v", c.what, got, c.want)
		}
	}
}
