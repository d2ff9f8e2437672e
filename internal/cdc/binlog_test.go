// MariaDB binlog feed against a private binlog-enabled server, and the fallback on the default one.
package cdc

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/binlog"
	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/testdb"
)

// One binlog-enabled server for all binlog cases (starting one costs ~1 s).
func TestMariaDBBinlog(t *testing.T) {
	srv := testdb.StartMariaDBBinlog(t)
	url := srv.Database(t, "cdc")
	a := open(t, Config{URL: url, ReplicaID: "pod-a"})
	b := open(t, Config{URL: url, ReplicaID: "pod-b"})

	t.Run("transport and server ids", func(t *testing.T) {
		if a.Transport() != Binlog || b.Flavor() != "binlog CDC (ROW)" {
			t.Fatalf("transport %s / %s (fallback %q)", a.Transport(), b.Flavor(), b.Fallback())
		}
		if got := a.BootLine(); got != "sql dialect resolved: mariadb — CDC: binlog CDC (ROW), RETURNING: native (INSERT/DELETE); UPDATE then SELECT" {
			t.Fatalf("boot line %q", got)
		}
		if a.ServerID() == b.ServerID() || a.ServerID() == 1 || b.ServerID() == 1 || a.ServerID() == 0 {
			t.Fatalf("server ids %d and %d (server's own is 1)", a.ServerID(), b.ServerID())
		}
		if a.ServerID() != binlog.ServerID("pod-a", 1) {
			t.Fatal("server id not derived from the replica id")
		}
		if binlog.ServerID("x", binlog.ServerID("x", 0)) == binlog.ServerID("x", 0) {
			t.Fatal("server id equal to the source's own")
		}
		// the server sees both readers under their own ids
		hosts := map[int64]bool{}
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			rows, err := a.DB().Query("SHOW SLAVE HOSTS")
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				_ = rows.Scan(ptrs...)
				sid, _ := strconv.ParseInt(delta.Text(delta.Normalize(vals[0])), 10, 64)
				hosts[sid] = true
			}
			rows.Close()
			if hosts[int64(a.ServerID())] && hosts[int64(b.ServerID())] {
				return
			}
		}
		t.Fatalf("SHOW SLAVE HOSTS has %v, want %d and %d", hosts, a.ServerID(), b.ServerID())
	})

	t.Run("writes from A reach B", func(t *testing.T) { exerciseWrites(t, a, b, "items") })

	t.Run("introspection tables pass, voltro's others do not", func(t *testing.T) {
		for _, q := range []string{
			"CREATE TABLE IF NOT EXISTS `_voltro_workflow_runs` (`executionId` VARCHAR(64) PRIMARY KEY, status VARCHAR(16))",
			"CREATE TABLE IF NOT EXISTS `_voltro_private` (id INT PRIMARY KEY, v INT)",
		} {
			if _, err := a.DB().Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		runs := subscribe(t, b, "_voltro_workflow_runs", nil)
		private := subscribe(t, b, "_voltro_private", nil)
		if _, err := a.DB().Exec("INSERT INTO `_voltro_private` (id, v) VALUES (1, 1)"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.DB().Exec("INSERT INTO `_voltro_workflow_runs` (`executionId`, status) VALUES ('wf_1', 'running')"); err != nil {
			t.Fatal(err)
		}
		if d := next(t, runs, 5*time.Second); d.Op != delta.Insert || d.Row["executionId"] != "wf_1" {
			t.Fatalf("introspection row: got %+v", d)
		}
		// the private insert committed first: had it passed, it would be here
		quiet(t, private, 300*time.Millisecond)
	})

	t.Run("mariadb client", func(t *testing.T) {
		ch := subscribe(t, b, "items", nil)
		mariadbClient(t, srv.Port, "voltro_t_cdc", "BEGIN; INSERT INTO items (name) VALUES ('rolled back'); ROLLBACK;")
		mariadbClient(t, srv.Port, "voltro_t_cdc", "INSERT INTO items (name, status) VALUES ('from client', 'paid')")
		if d := next(t, ch, 5*time.Second); d.Op != delta.Insert || d.Row["name"] != "from client" {
			t.Fatalf("got %+v", d)
		}
	})

	t.Run("watch command", func(t *testing.T) {
		env := map[string]string{"DB_URL": url}
		ch, stderr := runWatch(t, env, "items", func(i int) {
			out, err := exec.Command("mariadb", "-h127.0.0.1", fmt.Sprintf("-P%d", srv.Port), "-uroot", "voltro_t_cdc",
				"-e", "INSERT INTO items (name) VALUES ('watched')").CombinedOutput()
			if err != nil {
				t.Errorf("mariadb: %v\n%s", err, out)
			}
		})
		if d := next(t, ch, 15*time.Second); d.Op != delta.Insert || d.Row["name"] != "watched" {
			t.Fatalf("first line %+v", d)
		}
		if !strings.Contains(stderr.String(), "CDC: binlog CDC (ROW)") {
			t.Fatalf("stderr:\n%s", stderr.String())
		}
	})

	t.Run("restart resumes from the stored offset", func(t *testing.T) {
		ctx := context.Background()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := a.Insert(ctx, "items", delta.Row{"name": fmt.Sprintf("while down %d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		lg, _ := newLog(t)
		b2, err := New(ctx, Config{URL: url, ReplicaID: "pod-b", Logger: lg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b2.Close() })
		if b2.ServerID() != b.ServerID() {
			t.Fatalf("server id changed across restart: %d -> %d", b.ServerID(), b2.ServerID())
		}
		ch := subscribe(t, b2, "items", nil)
		if err := b2.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			d := next(t, ch, 5*time.Second)
			if d.Op != delta.Insert || d.Row["name"] != fmt.Sprintf("while down %d", i) {
				t.Fatalf("catch-up %d: got %+v (replayed from before the restart?)", i, d)
			}
		}
		quiet(t, ch, 300*time.Millisecond)
		if _, err := a.Insert(ctx, "items", delta.Row{"name": "after restart"}); err != nil {
			t.Fatal(err)
		}
		if d := next(t, ch, 5*time.Second); d.Row["name"] != "after restart" {
			t.Fatalf("got %+v", d)
		}
	})

	t.Run("purged position resyncs", func(t *testing.T) {
		ctx := context.Background()
		if _, err := a.DB().Exec(`INSERT INTO _voltro_cdc_offsets (replica_id, server_id, gtid) VALUES ('pod-c', 1, '0-1-999999')`); err != nil {
			t.Fatal(err)
		}
		lg, logs := newLog(t)
		c, err := New(ctx, Config{URL: url, ReplicaID: "pod-c", Logger: lg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		ch := subscribe(t, c, "items", nil)
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if d := next(t, ch, 10*time.Second); d.Op != delta.Resync {
			t.Fatalf("want resync, got %+v", d)
		}
		if !strings.Contains(logs.String(), "error 1236") {
			t.Fatal("no log line naming error 1236")
		}
		if _, err := a.Insert(ctx, "items", delta.Row{"name": "after resync"}); err != nil {
			t.Fatal(err)
		}
		if d := next(t, ch, 5*time.Second); d.Row["name"] != "after resync" {
			t.Fatalf("got %+v", d)
		}
	})

	t.Run("missing grant falls back to inline emit", func(t *testing.T) {
		srv.Exec(t,
			"CREATE USER 'norepl'@'%' IDENTIFIED BY 'pw'",
			"GRANT ALL ON voltro_t_cdc.* TO 'norepl'@'%'",
			"GRANT REPLICATION CLIENT ON *.* TO 'norepl'@'%'")
		lg, logs := newLog(t)
		f := open(t, Config{URL: srv.URL("norepl", "pw", "voltro_t_cdc"), ReplicaID: "pod-n", Logger: lg})
		if f.Transport() != Inline {
			t.Fatalf("transport %s, want inline", f.Transport())
		}
		for _, s := range []string{"REPLICATION SLAVE", "falling back to inline emit"} {
			if !strings.Contains(logs.String(), s) {
				t.Fatalf("boot log does not say %q:\n%s", s, logs.String())
			}
		}
		if strings.Contains(f.Fallback(), "REPLICATION CLIENT") {
			t.Fatalf("granted privilege reported missing: %s", f.Fallback())
		}
		if !strings.Contains(f.BootLine(), "CDC: inline emit") {
			t.Fatalf("boot line %q", f.BootLine())
		}
		exerciseWrites(t, f, f, "items_inline")
	})
}

// The default server has no binary log: every missing setting is named and
// the feed falls back to inline emit.
func TestMariaDBWithoutBinlogFallsBack(t *testing.T) {
	lg, logs := newLog(t)
	f := open(t, Config{URL: testdb.MariaDB(t, "cdcnobin"), ReplicaID: "a", Logger: lg})
	if f.Transport() != Inline {
		t.Fatalf("transport %s", f.Transport())
	}
	for _, s := range []string{"log_bin=ON", "binlog_format=ROW", "binlog_row_metadata=FULL", "gtid_strict_mode=ON", "falling back to inline emit"} {
		if !strings.Contains(logs.String(), s) {
			t.Errorf("boot log does not name %q", s)
		}
	}
	exerciseWrites(t, f, f, "items")
}

func mariadbClient(t *testing.T, port int, db, sql string) {
	t.Helper()
	out, err := exec.Command("mariadb", "-h127.0.0.1", fmt.Sprintf("-P%d", port), "-uroot", db, "-e", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb %q: %v\n%s", sql, err, out)
	}
}
