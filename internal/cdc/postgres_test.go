// PostgreSQL LISTEN/NOTIFY feed: cross-instance, psql, a second process, oversized rows, reconnect.
package cdc

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/cdc/pgnotify"
	"github.com/voltro/voltro/internal/testdb"
)

// Writes through instance A, through psql and through a second process all
// reach a subscriber on instance B.
func TestPostgresCrossInstance(t *testing.T) {
	url := testdb.Postgres(t, "cdcpg")
	a := open(t, Config{URL: url, ReplicaID: "a"})
	b := open(t, Config{URL: url, ReplicaID: "b"})
	if a.Transport() != Notify || b.Flavor() != "LISTEN/NOTIFY" {
		t.Fatalf("transport %s / %s", a.Transport(), b.Flavor())
	}
	if got := b.BootLine(); got != "sql dialect resolved: postgres — CDC: LISTEN/NOTIFY, RETURNING: native (INSERT/UPDATE/DELETE)" {
		t.Fatalf("boot line %q", got)
	}
	exerciseWrites(t, a, b, "items")

	ch := subscribe(t, b, "items", nil)
	psql(t, url, "BEGIN; INSERT INTO items (name) VALUES ('rolled back'); ROLLBACK;")
	psql(t, url, "INSERT INTO items (name, status) VALUES ('from psql', 'paid')")
	if d := next(t, ch, 5*time.Second); d.Op != delta.Insert || d.Row["name"] != "from psql" {
		t.Fatalf("psql insert: got %+v", d)
	}

	t.Run("second process", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "VOLTRO_CDC_HELPER=write", "DB_URL="+url, "POD_NAME=proc2")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper process: %v\n%s", err, out)
		}
		d := next(t, ch, 5*time.Second)
		if d.Op != delta.Insert || d.Row["name"] != "from another process" {
			t.Fatalf("got %+v", d)
		}
	})

	t.Run("oversized row", func(t *testing.T) {
		ctx := context.Background()
		body := strings.Repeat("x", 20000)
		row, err := a.Insert(ctx, "items", delta.Row{"name": "big", "body": body})
		if err != nil {
			t.Fatal(err)
		}
		d := next(t, ch, 5*time.Second)
		if d.Op != delta.Insert || d.Row["body"] != body || id(d.Key) != id(row) {
			t.Fatalf("oversized insert: op %s key %v body %d bytes", d.Op, d.Key, len(d.Row["body"].(string)))
		}
		if _, err := a.Update(ctx, "items", delta.Row{"id": id(row)}, delta.Row{"status": "paid"}); err != nil {
			t.Fatal(err)
		}
		if d := next(t, ch, 5*time.Second); d.Op != delta.Update || d.Row["status"] != "paid" || d.Row["body"] != body {
			t.Fatalf("oversized update: %s %v", d.Op, d.Row["status"])
		}
		if _, err := a.Delete(ctx, "items", delta.Row{"id": id(row)}); err != nil {
			t.Fatal(err)
		}
		if d := next(t, ch, 5*time.Second); d.Op != delta.Delete || id(d.Key) != id(row) {
			t.Fatalf("oversized delete: %+v", d.Key)
		}
	})

	t.Run("truncate resyncs", func(t *testing.T) {
		psql(t, url, "TRUNCATE items")
		if d := next(t, ch, 5*time.Second); d.Op != delta.Resync || d.Table != "items" {
			t.Fatalf("got %+v", d)
		}
	})
}

// Killing the listening connection makes subscribers resync; later changes
// still arrive over the new connection.
func TestPostgresListenerReconnect(t *testing.T) {
	url := testdb.Postgres(t, "cdcpgre")
	a := open(t, Config{URL: url, ReplicaID: "a"})
	b := open(t, Config{URL: url, ReplicaID: "b-reconnect"})
	mustExec(t, a, itemsDDL(a.Dialect(), "items"))
	ch := subscribe(t, b, "items", nil)
	var killed int
	err := a.DB().QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, pgnotify.AppName("b-reconnect")).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminate listener: killed %d, %v", killed, err)
	}
	if d := next(t, ch, 10*time.Second); d.Op != delta.Resync || d.Table != "items" {
		t.Fatalf("want a resync, got %+v", d)
	}
	if _, err := a.Insert(context.Background(), "items", delta.Row{"name": "after"}); err != nil {
		t.Fatal(err)
	}
	if d := next(t, ch, 5*time.Second); d.Op != delta.Insert || d.Row["name"] != "after" {
		t.Fatalf("after reconnect: %+v", d)
	}
}

// TestHelperProcess is a second instance in its own process, run by
// TestPostgresCrossInstance: it writes one row through its own feed.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("VOLTRO_CDC_HELPER") != "write" {
		return
	}
	cfg, err := ConfigFromEnv(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	f := open(t, cfg)
	if _, err := f.Insert(context.Background(), "items", delta.Row{"name": "from another process"}); err != nil {
		t.Fatal(err)
	}
}

func psql(t *testing.T, url, sql string) {
	t.Helper()
	out, err := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v\n%s", sql, err, out)
	}
}
