package runner

// Tests of the presence probe on the real databases: a dead peer that owns
// nothing is passed over on the first pass, a peer whose locker session is
// alive is never suspected by the probe.

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

func presenceStores(t *testing.T) map[string]func(t *testing.T) store.Driver {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	migrated := func(t *testing.T, s store.Driver, err error) store.Driver {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	return map[string]func(t *testing.T) store.Driver{
		"postgres": func(t *testing.T) store.Driver {
			s, err := postgres.Open(context.Background(), testdb.Postgres(t, "runner_presence"), postgres.Options{Logger: quiet})
			return migrated(t, s, err)
		},
		"mariadb": func(t *testing.T) store.Driver {
			s, err := mysql.Open(context.Background(), testdb.MariaDB(t, "runner_presence"), mysql.Options{Logger: quiet})
			return migrated(t, s, err)
		},
	}
}

// logLines collects what a runner logs, for asserting which rule fired.
type logLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// registerGhost writes a live-looking runner row for addr, as a process
// that registered and heartbeat moments ago would have left it, and returns
// that process's locker, still open.
func registerGhost(t *testing.T, d store.Driver, addr string) store.Locker {
	t.Helper()
	ctx := context.Background()
	ghost := store.Runner{Address: addr, ReplicaID: addr, Groups: []string{"default"}, EntityTypes: []string{"test.entity"}, Healthy: true}
	if err := d.RegisterRunner(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	l, err := d.NewLocker(ctx, store.LockAdvisory, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if err := l.Heartbeat(ctx, addr); err != nil {
		t.Fatal(err)
	}
	return l
}

// A peer SIGKILLed while owning nothing: its row is fresh, it holds no
// lock, its locker session is gone. The new runner finds it absent on its
// first pass and takes every shard well inside the grace period the
// unclaimed-proposal rule would need.
func TestDeadPeerWithoutShardsIsFoundByPresence(t *testing.T) {
	for name, open := range presenceStores(t) {
		t.Run(name, func(t *testing.T) {
			d := open(t)
			_ = registerGhost(t, d, "ghost:1").Close() // its session ends holding nothing

			var logs logLines
			started := time.Now()
			r := startRunnerLogging(t, d, store.LockAdvisory, "real:1", time.Minute, &logs)
			testwait.For(t, 20*time.Second, "the real runner holds every shard", func() bool { return len(r.Held()) == testShards })
			took := time.Since(started)
			if !strings.Contains(logs.String(), "lock session is gone") {
				t.Fatalf("the shards were not taken on the presence probe's word; log:\n%s", logs.String())
			}
			if took >= r.unclaimedGrace() {
				t.Fatalf("all shards held after %s, not before the %s grace", took, r.unclaimedGrace())
			}
			t.Logf("all %d shards held %s after boot", testShards, took.Round(time.Millisecond))
		})
	}
}

// A peer whose locker session is alive but which takes nothing (wedged):
// the probe must not call it dead; only the grace period passes it over.
func TestLivePeerIsNotSuspectedByPresence(t *testing.T) {
	for name, open := range presenceStores(t) {
		t.Run(name, func(t *testing.T) {
			d := open(t)
			registerGhost(t, d, "wedged:1") // its locker stays open
			var logs logLines
			r := startRunnerLogging(t, d, store.LockAdvisory, "real:1", time.Minute, &logs)
			testwait.For(t, 20*time.Second, "the real runner holds every shard", func() bool { return len(r.Held()) == testShards })
			out := logs.String()
			if strings.Contains(out, "lock session is gone") {
				t.Fatalf("a peer with a live locker session was called dead; log:\n%s", out)
			}
			if !strings.Contains(out, "did not take the shards proposed to it") {
				t.Fatalf("expected the grace rule to pass the wedged peer over; log:\n%s", out)
			}
		})
	}
}
