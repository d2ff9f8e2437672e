// A private MariaDB with the binary log on, for change-data-capture tests:
// its own mariadbd on a free loopback port (from 3320 up) and a temporary
// datadir, configured the way the binlog feed needs it, stopped by PID when
// the test ends. The default server on 3306 runs without a binlog.

package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BinlogServer is one running mariadbd with log_bin, ROW images with full
// metadata, GTID strict mode and server_id=1.
type BinlogServer struct {
	Port int
	Dir  string
	cmd  *exec.Cmd
}

// MariaDBBinlog starts a binlog-enabled MariaDB for t and returns a
// mariadb:// URL (user root) of a fresh database voltro_t_cdc on it.
func MariaDBBinlog(t testing.TB) string {
	t.Helper()
	return StartMariaDBBinlog(t).Database(t, "cdc")
}

// StartMariaDBBinlog starts the server; it is stopped when t ends.
func StartMariaDBBinlog(t testing.TB) *BinlogServer {
	t.Helper()
	for _, bin := range []string{"mariadbd", "mariadb-install-db"} {
		if _, err := binlogLookPath(bin); err != nil {
			t.Fatalf("testdb: %s not found (install mariadb-server): %v", bin, err)
		}
	}
	dir, err := os.MkdirTemp("", "voltro-binlog-")
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("testdb: mariadb-install-db: %v\n%s", err, out)
	}
	port := binlogFreePort(t, 3320)
	mariadbd, _ := binlogLookPath("mariadbd")
	cmd := exec.Command(mariadbd, "--no-defaults",
		"--datadir="+data, "--user=root",
		"--bind-address=127.0.0.1", fmt.Sprintf("--port=%d", port),
		"--socket="+filepath.Join(dir, "s.sock"), "--pid-file="+filepath.Join(dir, "m.pid"),
		"--log-error="+filepath.Join(dir, "error.log"),
		"--server-id=1", "--log-bin=binlog", "--binlog-format=ROW", "--binlog-row-image=FULL",
		"--binlog-row-metadata=FULL", "--gtid-strict-mode=ON",
		"--skip-name-resolve", "--innodb-buffer-pool-size=64M", "--max-connections=200",
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("testdb: start mariadbd: %v", err)
	}
	s := &BinlogServer{Port: port, Dir: dir, cmd: cmd}
	t.Cleanup(s.stop)
	if err := s.waitUp(30 * time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		t.Fatalf("testdb: binlog mariadbd on port %d did not come up: %v\n%s", port, err, log)
	}
	return s
}

// AdminDSN is the root DSN (go-sql-driver form) of the server.
func (s *BinlogServer) AdminDSN() string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.Port)
}

// URL is a mariadb:// URL for database db as user (password may be empty).
func (s *BinlogServer) URL(user, password, db string) string {
	auth := user
	if password != "" {
		auth += ":" + password
	}
	return fmt.Sprintf("mariadb://%s@127.0.0.1:%d/%s", auth, s.Port, db)
}

// Database drops and recreates voltro_t_<name> and returns its root URL.
func (s *BinlogServer) Database(t testing.TB, name string) string {
	t.Helper()
	dbname := "voltro_t_" + name
	s.Exec(t, "DROP DATABASE IF EXISTS "+dbname, "CREATE DATABASE "+dbname)
	return s.URL("root", "", dbname)
}

// Exec runs admin statements as root.
func (s *BinlogServer) Exec(t testing.TB, stmts ...string) {
	t.Helper()
	db, err := sql.Open("mysql", s.AdminDSN())
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("testdb: %s: %v", q, err)
		}
	}
}

func (s *BinlogServer) waitUp(limit time.Duration) error {
	db, err := sql.Open("mysql", s.AdminDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the server by its PID: SIGTERM, then SIGKILL after 10 s.
func (s *BinlogServer) stop() {
	if s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// binlogFreePort returns the first port from start up that nothing listens on.
func binlogFreePort(t testing.TB, start int) int {
	t.Helper()
	for p := start; p < start+200; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			_ = l.Close()
			return p
		}
	}
	t.Fatalf("testdb: no free port in %d..%d", start, start+200)
	return 0
}

func binlogLookPath(bin string) (string, error) {
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin"} {
		p := filepath.Join(d, bin)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}
