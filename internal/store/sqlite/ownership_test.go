// Tests of the file ownership guard, across real processes: the test binary
// re-executes itself as a child that holds the guard.

package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/sqlite"
)

// childEnv carries the database path to the helper process.
const childEnv = "VOLTRO_SQLITE_OWNERSHIP_CHILD"

// TestOwnershipHelperProcess is the child: it takes the guard, says "ready",
// and holds it until its stdin closes (then exits normally without calling
// Release) or it is killed. It does nothing in a normal test run.
func TestOwnershipHelperProcess(t *testing.T) {
	dbPath := os.Getenv(childEnv)
	if dbPath == "" {
		t.Skip("helper process for the ownership tests")
	}
	if _, err := sqlite.AcquireOwnership(dbPath); err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		os.Exit(3)
	}
	os.Stdout.WriteString("ready\n")
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
	}
}

// holder is a child process holding the guard on a database.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startHolder(t *testing.T, dbPath string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOwnershipHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dbPath)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper did not take the guard: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return h
}

func wantLocked(t *testing.T, dbPath string) {
	t.Helper()
	o, err := sqlite.AcquireOwnership(dbPath)
	if err == nil {
		_ = o.Release()
		t.Fatalf("acquired the guard while another engine holds it")
	}
	if !errors.Is(err, errs.ErrLocked) {
		t.Fatalf("want a locked error, got %v", err)
	}
	for _, part := range []string{dbPath + sqlite.LockFileSuffix, "stop", "PostgreSQL or MariaDB"} {
		if !strings.Contains(err.Error(), part) {
			t.Fatalf("error %q should mention %q", err, part)
		}
	}
}

func mustAcquire(t *testing.T, dbPath string) *sqlite.Ownership {
	t.Helper()
	o, err := sqlite.AcquireOwnership(dbPath)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return o
}

func TestOwnershipAcrossProcesses(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "app.db")
	h := startHolder(t, dbPath)
	wantLocked(t, dbPath)

	// The guard holds no transaction: the database stays readable and
	// writable through ordinary connections meanwhile.
	ctx := context.Background()
	s := openTest(t, dbPath)
	r, err := s.Enqueue(ctx, &store.Message{Shard: "default/1", EntityType: "order", EntityID: "1", Payload: []byte("{}")}, nil)
	if err != nil {
		t.Fatalf("write while the guard is held: %v", err)
	}
	if m, err := s.GetMessage(ctx, r.ID); err != nil || m.EntityID != "1" {
		t.Fatalf("read while the guard is held: %+v %v", m, err)
	}
	if _, err := s.DB().ExecContext(ctx, `CREATE TABLE app_notes (note TEXT); INSERT INTO app_notes VALUES ('x')`); err != nil {
		t.Fatalf("application write while the guard is held: %v", err)
	}
	wantLocked(t, dbPath) // still held

	// Process death releases it.
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Wait()
	o := mustAcquire(t, dbPath)
	if err := o.Release(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dbPath + sqlite.LockFileSuffix)
	if err != nil || fi.Size() != 0 {
		t.Fatalf("the empty sidecar must stay after release: %v %v", fi, err)
	}
}

func TestOwnershipReleasedOnNormalExit(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "app.db")
	h := startHolder(t, dbPath)
	wantLocked(t, dbPath)
	_ = h.stdin.Close() // the child returns and the test binary exits 0
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("helper exit: %v", err)
	}
	o := mustAcquire(t, dbPath)
	_ = o.Release()
}

func TestOwnershipInProcess(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "app.db")
	o := mustAcquire(t, dbPath)
	if o.Path() != dbPath+sqlite.LockFileSuffix {
		t.Fatalf("lock path %s", o.Path())
	}
	wantLocked(t, dbPath)
	// the same file through another spelling of the path
	rel, err := filepath.Rel(mustGetwd(t), dbPath)
	if err == nil {
		wantLocked(t, rel)
	}
	if err := o.Release(); err != nil {
		t.Fatal(err)
	}
	if err := o.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	o2 := mustAcquire(t, dbPath)
	defer o2.Release()
	wantLocked(t, dbPath)
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
