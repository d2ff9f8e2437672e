// A watcher (Watch with WatchConfig) as `voltro watch` runs it; the
// command's flags and output are tested in cmd/voltro.
package cdc

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
)

// syncBuf is a goroutine-safe buffer for the watcher's log.
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

// runWatch starts a watcher of table configured from env, logging to the
// returned buffer, and returns its deltas; write is called repeatedly until
// the first delta appears, since the watcher subscribes asynchronously.
func runWatch(t *testing.T, env map[string]string, table string, write func(i int)) (<-chan delta.Delta, *syncBuf) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuf{}
	cfg, err := WatchConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	out := make(chan delta.Delta, 64)
	done := make(chan error, 1)
	go func() {
		defer close(out)
		done <- Watch(ctx, cfg, table, nil, func(d delta.Delta) error {
			select {
			case out <- d:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch returned %v", err)
		}
	})
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
