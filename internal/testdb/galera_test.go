// Tests of the Galera test cluster itself: replication across nodes on the
// shared cluster, and kill/restart (rejoin by IST) on a private one.
package testdb

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func TestMain(m *testing.M) {
	code := m.Run()
	StopGalera()
	os.Exit(code)
}

// openURL opens a mariadb:// URL from Galera with causal reads, so a row
// committed on one node is seen by the next read on another.
func openURL(t *testing.T, raw string) *sql.DB {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = u.User.Username(), "tcp", u.Host, strings.TrimPrefix(u.Path, "/")
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 5*time.Second, 30*time.Second, 30*time.Second
	cfg.Params = map[string]string{"wsrep_sync_wait": "1"}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestGaleraReplicates(t *testing.T) {
	urls := Galera(t)
	if len(urls) != 3 {
		t.Fatalf("got %d URLs, want 3: %v", len(urls), urls)
	}
	ctx := context.Background()
	n0, n2 := openURL(t, urls[0]), openURL(t, urls[2])
	if _, err := n0.ExecContext(ctx, "CREATE TABLE kv (k VARCHAR(64) PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := n0.ExecContext(ctx, "INSERT INTO kv VALUES ('a', 'one')"); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := n2.QueryRowContext(ctx, "SELECT v FROM kv WHERE k = 'a'").Scan(&v); err != nil || v != "one" {
		t.Fatalf("node 2 read %q, %v; want \"one\"", v, err)
	}
	for i, u := range urls {
		var on int
		if err := openURL(t, u).QueryRowContext(ctx, "SELECT @@wsrep_on").Scan(&on); err != nil || on != 1 {
			t.Fatalf("node %d: @@wsrep_on = %d, %v; want 1", i, on, err)
		}
	}
}

func TestGaleraKillRestart(t *testing.T) {
	c := NewGalera(t)
	ctx := context.Background()
	n0 := openURL(t, c.Node(0))
	if _, err := n0.ExecContext(ctx, "CREATE TABLE kv (k VARCHAR(64) PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	// Let node 1 commit a row before it dies: a kill right after DDL can
	// leave its recovered position behind its gcache, and Galera then
	// falls back to a full SST, which is correct but not what this test
	// checks.
	if _, err := n0.ExecContext(ctx, "INSERT INTO kv VALUES ('before', 'x')"); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := openURL(t, c.Node(1)).QueryRowContext(ctx, "SELECT v FROM kv WHERE k = 'before'").Scan(&v); err != nil {
		t.Fatalf("node 1 before the kill: %v", err)
	}
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	if c.PID(1) != 0 {
		t.Fatalf("node 1 still has pid %d after Kill", c.PID(1))
	}
	t0 := time.Now()
	if err := c.WaitSize(ctx, 2); err != nil {
		t.Fatal(err)
	}
	t.Logf("survivors saw cluster size 2 after %v", time.Since(t0).Round(time.Millisecond))
	if _, err := n0.ExecContext(ctx, "INSERT INTO kv VALUES ('while-down', 'x')"); err != nil {
		t.Fatalf("write with one node down: %v", err)
	}
	t0 = time.Now()
	if err := c.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("node 1 rejoined after %v", time.Since(t0).Round(time.Millisecond))
	if err := c.WaitSize(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := openURL(t, c.Node(1)).QueryRowContext(ctx, "SELECT v FROM kv WHERE k = 'while-down'").Scan(&v); err != nil {
		t.Fatalf("restarted node misses the row written while it was down: %v", err)
	}
	raw, err := os.ReadFile(c.nodes[1].errlog)
	if err != nil {
		t.Fatal(err)
	}
	last := string(raw[strings.LastIndex(string(raw), "Starting MariaDB"):])
	// The rsync script runs on every join; a full copy says "rsync SST
	// completed", a rejoin from the recovered position "Receiving IST".
	if strings.Contains(last, "rsync SST completed") || !strings.Contains(last, "Receiving IST") {
		var lines []string
		for _, l := range strings.Split(last, "\n") {
			if strings.Contains(l, "SST") || strings.Contains(l, "IST") || strings.Contains(l, "position") {
				lines = append(lines, l)
			}
		}
		t.Errorf("restarted node took a full SST; want IST:\n%s", strings.Join(lines, "\n"))
	}
}

// A paused node drops out of the others' view and comes back after SIGCONT;
// a partitioned one goes non-Primary (wsrep_ready OFF) while the other two
// keep a Primary component of two, and rejoins when the rules are gone.
func TestGaleraPauseAndPartition(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("partitions need root for iptables")
	}
	c := NewGalera(t)
	ctx := context.Background()
	status := func(i int) map[string]string {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		st, err := c.NodeStatus(qctx, i)
		if err != nil {
			return map[string]string{"error": err.Error()}
		}
		return st
	}
	if err := c.Pause(1); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := c.WaitSize(ctx, 2); err != nil {
		t.Fatal(err)
	}
	t.Logf("the others saw a cluster of two %s after SIGSTOP", time.Since(t0).Round(time.Millisecond))
	if err := c.Resume(1); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitSize(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.Partition(2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Heal)
	t0 = time.Now()
	err := waitFor(ctx, 30*time.Second, func() (bool, error) {
		st := status(2)
		return st["wsrep_ready"] == "OFF" && st["wsrep_cluster_status"] != "Primary", nil
	})
	if err != nil {
		t.Fatalf("node 2 still %v after the partition: %v", status(2), err)
	}
	t.Logf("the cut-off node went non-Primary %s after the partition", time.Since(t0).Round(time.Millisecond))
	for _, i := range []int{0, 1} {
		err := waitFor(ctx, 30*time.Second, func() (bool, error) {
			st := status(i)
			return st["wsrep_ready"] == "ON" && st["wsrep_cluster_status"] == "Primary" && st["wsrep_cluster_size"] == "2", nil
		})
		if err != nil {
			t.Fatalf("node %d: %v: %v", i, status(i), err)
		}
	}
	c.Heal()
	t0 = time.Now()
	if err := c.WaitSize(ctx, 3); err != nil {
		t.Fatal(err)
	}
	t.Logf("the partition healed in %s", time.Since(t0).Round(time.Millisecond))
	if out, err := exec.Command("iptables", "-S").CombinedOutput(); err != nil || strings.Contains(string(out), c.chain()) {
		t.Fatalf("rules of %s left after Heal: %v\n%s", c.chain(), err, out)
	}
}
