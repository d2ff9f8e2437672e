package runner

// Tests of the unclaimed-proposal rule: a peer whose row looks live but which
// never takes the shards proposed to it is passed over long before its
// heartbeat goes stale, and a healthy peer is never suspected.

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

type nopCallbacks struct{}

func (nopCallbacks) ShardAcquired(string, int64)               {}
func (nopCallbacks) ShardLost(string, int64, string)           {}
func (nopCallbacks) DrainShard(context.Context, string, int64) {}
func (nopCallbacks) Beat(context.Context)                      {}

const testShards = 30

func startRunner(t *testing.T, d store.Driver, mode store.LockMode, addr string, heartbeat time.Duration) *Runner {
	return startRunnerLogging(t, d, mode, addr, heartbeat, io.Discard)
}

// startRunnerLogging also copies the runner's log to also.
func startRunnerLogging(t *testing.T, d store.Driver, mode store.LockMode, addr string, heartbeat time.Duration, also io.Writer) *Runner {
	t.Helper()
	r := New(d, nopCallbacks{}, Options{
		Address: addr, ReplicaID: addr, Groups: []string{"default"}, ShardCount: testShards,
		Mode: mode, Heartbeat: heartbeat,
		EntityTypes: func() []string { return []string{"test.entity"} },
		Logger:      slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, also), &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer lcancel()
		r.Leave(lctx)
	})
	return r
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// A runner row with a fresh heartbeat and no process behind it, holding no
// locks (its shards were taken over before it died, so no survey ever sees
// it lose a lock), must not keep the shards proposed to it unowned until
// its heartbeat goes stale.
func TestPeerThatNeverTakesItsProposedShardsIsPassedOver(t *testing.T) {
	for _, mode := range []store.LockMode{store.LockAdvisory, store.LockRow} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			d := memory.New()
			// A long heartbeat: the ghost stays live (stale limit 3 min)
			// for the whole test, so staleness cannot explain success.
			const heartbeat = time.Minute
			ghost := store.Runner{
				Address: "ghost:1", ReplicaID: "ghost", Groups: []string{"default"},
				EntityTypes: []string{"test.entity"}, Healthy: true,
			}
			if err := d.RegisterRunner(ctx, ghost); err != nil {
				t.Fatal(err)
			}
			if l, err := d.NewLocker(ctx, mode, ghost.Address); err != nil {
				t.Fatal(err)
			} else {
				if err := l.Heartbeat(ctx, ghost.Address); err != nil {
					t.Fatal(err)
				}
				_ = l.Close() // dies holding nothing
			}
			locks, err := d.ShardLocks(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range locks {
				if l.Owner == ghost.Address {
					t.Fatalf("the ghost must hold no shard, ledger: %+v", l)
				}
			}

			started := time.Now()
			r := startRunner(t, d, mode, "real:1", heartbeat)
			deadline := started.Add(10 * time.Second)
			for len(r.Held()) < testShards {
				if time.Now().After(deadline) {
					st := r.Status()
					t.Fatalf("after %s the real runner holds %d of %d shards (live %v, suspects %v)",
						time.Since(started).Round(time.Millisecond), len(st.Held), testShards, st.LiveRunners, st.Suspects)
				}
				time.Sleep(20 * time.Millisecond)
			}
			took := time.Since(started)
			st := r.Status()
			if !slices.Contains(st.LiveRunners, ghost.Address) {
				t.Fatalf("the ghost should still look live (that is the scenario), live: %v", st.LiveRunners)
			}
			if !slices.Contains(st.Suspects, ghost.Address) {
				t.Fatalf("the ghost should be a suspect, suspects: %v", st.Suspects)
			}
			t.Logf("all %d shards held after %s", testShards, took.Round(time.Millisecond))
		})
	}
}

// Two healthy runners, the second joining after the first took everything:
// shards handed over to the joiner are free for a moment and proposed to it,
// which must never make either runner suspect the other.
func TestHealthyPeerIsNotSuspected(t *testing.T) {
	for _, mode := range []store.LockMode{store.LockAdvisory, store.LockRow} {
		t.Run(string(mode), func(t *testing.T) {
			d := memory.New()
			const heartbeat = 500 * time.Millisecond
			a := startRunner(t, d, mode, "a:1", heartbeat)
			testwait.For(t, 10*time.Second, "a holds every shard", func() bool { return len(a.Held()) == testShards })
			b := startRunner(t, d, mode, "b:1", heartbeat)
			balanced := func() bool {
				return len(a.Held())+len(b.Held()) == testShards && len(a.Held()) > 0 && len(b.Held()) > 0
			}
			testwait.For(t, 10*time.Second, "a and b share the shards", balanced)
			// Watch well past the grace period.
			end := time.Now().Add(a.unclaimedGrace() + 2*time.Second)
			for time.Now().Before(end) {
				for _, r := range []*Runner{a, b} {
					if s := r.Status().Suspects; len(s) > 0 {
						t.Fatalf("%s suspects healthy peers %v", r.Address(), s)
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !balanced() {
				t.Fatalf("the split changed: a %d, b %d", len(a.Held()), len(b.Held()))
			}
		})
	}
}
