package cdc

// A dedicated replication user (VOLTRO_CDC_URL) holding only the grants the
// deployment contract names reads the binlog, even when its URL names the
// application's database (it may not use that database: error 1044); a
// feed that falls back to inline emit says so at Warn, with the reason, in
// its boot line and in Problem.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/testdb"
)

func TestReplicationUserWithOnlyReplicationGrants(t *testing.T) {
	srv := testdb.StartMariaDBBinlog(t)
	url := srv.Database(t, "repl")
	srv.Exec(t,
		"CREATE USER 'repl'@'%' IDENTIFIED BY 'pw'",
		"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'repl'@'%'",
		"CREATE USER 'half'@'%' IDENTIFIED BY 'pw'",
		"GRANT REPLICATION CLIENT ON *.* TO 'half'@'%'")

	t.Run("binlog with a URL naming the database", func(t *testing.T) {
		lg, logs := newLog(t)
		f := open(t, Config{URL: url, ReplicationURL: srv.URL("repl", "pw", "voltro_t_repl"), ReplicaID: "pod-r", Logger: lg})
		if f.Transport() != Binlog || f.ServerID() == 0 {
			t.Fatalf("transport %s, server_id %d, fallback %q", f.Transport(), f.ServerID(), f.Fallback())
		}
		if p := f.Problem(); p != "" {
			t.Fatalf("problem %q on a working stream", p)
		}
		if strings.Contains(logs.String(), "1044") {
			t.Fatalf("the replication user was refused a database:\n%s", logs.String())
		}
		// a write no feed made arrives only through the binlog
		mustExec(t, f, "DROP TABLE IF EXISTS items_repl", itemsDDL(f.Dialect(), "items_repl"))
		ch := subscribe(t, f, "items_repl", nil)
		if _, err := f.DB().ExecContext(context.Background(), "INSERT INTO items_repl (name) VALUES ('raw')"); err != nil {
			t.Fatal(err)
		}
		if d := next(t, ch, 10*time.Second); d.Op != delta.Insert || d.Row["name"] != "raw" {
			t.Fatalf("got %+v", d)
		}
	})

	t.Run("a fallback is loud", func(t *testing.T) {
		lg, logs := newLog(t)
		f := open(t, Config{URL: url, ReplicationURL: srv.URL("half", "pw", "voltro_t_repl"), ReplicaID: "pod-h", Logger: lg})
		if f.Transport() != Inline {
			t.Fatalf("transport %s", f.Transport())
		}
		p := f.Problem()
		if !strings.Contains(p, "fell back to inline emit") || !strings.Contains(p, "REPLICATION SLAVE") {
			t.Fatalf("problem %q", p)
		}
		var boot string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "sql dialect resolved") {
				boot = l
			}
		}
		if !strings.Contains(boot, "level=WARN") || !strings.Contains(boot, "fallback") || !strings.Contains(boot, "REPLICATION SLAVE") {
			t.Fatalf("boot line does not warn with the reason: %q", boot)
		}
	})
}
