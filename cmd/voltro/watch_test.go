// The watch command: flags, JSON lines, boot line on stderr.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/testdb"
)

// syncBuf is a goroutine-safe buffer for stderr.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runWatchJSON starts the watch command and returns its stdout lines as
// deltas; write is called repeatedly until the first line appears, since
// the command subscribes asynchronously.
func runWatchJSON(t *testing.T, env map[string]string, args []string, write func(i int)) (<-chan delta.Delta, *syncBuf) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr := &syncBuf{}
	done := make(chan error, 1)
	go func() {
		done <- runWatch(ctx, args, func(k string) string { return env[k] }, pw, stderr)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch returned %v", err)
		}
	})
	out := make(chan delta.Delta, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var d delta.Delta
			if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
				t.Errorf("stdout line is not one JSON object: %q", sc.Text())
				continue
			}
			out <- d
		}
	}()
	first := make(chan delta.Delta, 1)
	go func() {
		for i := 0; ; i++ {
			write(i)
			select {
			case d, ok := <-out:
				if ok {
					first <- d
				}
				close(first)
				return
			case <-time.After(300 * time.Millisecond):
			case <-ctx.Done():
				return
			}
		}
	}()
	merged := make(chan delta.Delta, 64)
	go func() {
		defer close(merged)
		for d := range first {
			merged <- d
		}
		for d := range out {
			merged <- d
		}
	}()
	return merged, stderr
}

func TestWatchCommandPostgres(t *testing.T) {
	url := testdb.Postgres(t, "cdcwatch")
	if out, err := exec.Command("psql", "-X", "-q", url, "-c", "CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL, status text NOT NULL DEFAULT 'new', body text)").CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	env := map[string]string{"DB_URL": url}
	ch, stderr := runWatchJSON(t, env, []string{"items", "--where", "status=paid", "--format", "json"}, func(i int) {
		if out, err := exec.Command("psql", "-X", "-q", url, "-c", "INSERT INTO items (name, status) VALUES ('unpaid', 'new'), ('from psql', 'paid')").CombinedOutput(); err != nil {
			t.Errorf("psql: %v\n%s", err, out)
		}
	})
	d := nextDelta(t, ch, 15*time.Second)
	if d.Op != delta.Insert || d.Table != "items" || d.Row["name"] != "from psql" || d.Key["id"] == nil {
		t.Fatalf("first line %+v", d)
	}
	if !strings.Contains(stderr.String(), "sql dialect resolved: postgres — CDC: LISTEN/NOTIFY") {
		t.Fatalf("no boot line on stderr:\n%s", stderr.String())
	}
}

// nextDelta is the next delta on ch, failing t after limit.
func nextDelta(t testing.TB, ch <-chan delta.Delta, limit time.Duration) delta.Delta {
	t.Helper()
	select {
	case d, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed")
		}
		return d
	case <-time.After(limit):
		t.Fatalf("no delta within %v", limit)
	}
	return delta.Delta{}
}

func TestWatchArgs(t *testing.T) {
	ctx := context.Background()
	env := func(string) string { return "" }
	for _, args := range [][]string{{}, {"a", "b"}, {"t", "--format", "xml"}, {"t", "--where", "novalue"}} {
		err := runWatch(ctx, args, env, io.Discard, io.Discard)
		if !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("args %q: %v, want invalid_argument", args, err)
		}
	}
	bad := func(k string) string {
		if k == "CDC" {
			return "maybe"
		}
		return ""
	}
	if err := runWatch(ctx, []string{"t"}, bad, io.Discard, io.Discard); !errors.Is(err, errs.ErrInvalidConfig) {
		t.Errorf("CDC=maybe: %v", err)
	}
}
