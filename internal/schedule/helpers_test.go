// Shared test helpers: schedulers with quiet logs, stores on real servers.
package schedule

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestScheduler builds a scheduler whose log goes to the test log on
// failure, with short housekeeping periods.
func newTestScheduler(t testing.TB, cfg Config) *Scheduler {
	t.Helper()
	if cfg.Logger == nil {
		buf := &syncBuffer{}
		cfg.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("log of %s:\n%s", cfg.ReplicaID, buf.String())
			}
		})
	}
	cfg.Heartbeat = orDefault(cfg.Heartbeat, 200*time.Millisecond)
	cfg.QueuePoll = orDefault(cfg.QueuePoll, 50*time.Millisecond)
	cfg.BootGrace = orDefault(cfg.BootGrace, 300*time.Millisecond)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runScheduler runs s until the test ends (or stop is called) and fails the
// test if Run returns an error.
func runScheduler(t testing.TB, s *Scheduler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
