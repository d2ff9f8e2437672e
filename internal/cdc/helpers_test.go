// Shared helpers of the feed tests: logging, opening feeds, receiving deltas, test tables.
package cdc

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/store"
)

// logBuf collects log output for assertions and echoes it to the test log.
type logBuf struct {
	t  testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLog(t testing.TB) (*slog.Logger, *logBuf) {
	lb := &logBuf{t: t}
	return slog.New(slog.NewTextHandler(lb, nil)), lb
}

func open(t testing.TB, cfg Config) *Feed {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger, _ = newLog(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open feed %s: %v", cfg.ReplicaID, err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func subscribe(t testing.TB, f *Feed, table string, filter delta.Filter) <-chan delta.Delta {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := f.Subscribe(ctx, table, filter)
	if err != nil {
		t.Fatalf("subscribe %s: %v", table, err)
	}
	return ch
}

// next returns the next delta or fails after limit.
func next(t testing.TB, ch <-chan delta.Delta, limit time.Duration) delta.Delta {
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

// waitFor skips deltas until one passes pred.
func waitFor(t testing.TB, ch <-chan delta.Delta, limit time.Duration, pred func(delta.Delta) bool) delta.Delta {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case d, ok := <-ch:
			if !ok {
				t.Fatal("subscription closed")
			}
			if pred(d) {
				return d
			}
		case <-deadline:
			t.Fatalf("no matching delta within %v", limit)
		}
	}
}

// quiet asserts nothing arrives for d.
func quiet(t testing.TB, ch <-chan delta.Delta, d time.Duration) {
	t.Helper()
	select {
	case got := <-ch:
		t.Fatalf("unexpected delta %+v", got)
	case <-time.After(d):
	}
}

// itemsDDL creates the test table on each dialect.
func itemsDDL(d store.Dialect, table string) string {
	switch d {
	case store.Postgres:
		return `CREATE TABLE ` + table + ` (id bigserial PRIMARY KEY, name text NOT NULL, status text NOT NULL DEFAULT 'new', body text)`
	case store.MariaDB, store.MySQL:
		return `CREATE TABLE ` + table + ` (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL, status VARCHAR(20) NOT NULL DEFAULT 'new', body LONGTEXT)`
	default:
		return `CREATE TABLE ` + table + ` (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'new', body TEXT)`
	}
}

func mustExec(t testing.TB, f *Feed, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := f.DB().ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func id(r delta.Row) int64 {
	v, _ := r["id"].(int64)
	return v
}
