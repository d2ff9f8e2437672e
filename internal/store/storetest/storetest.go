package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// runCore runs the cases of the Cluster and Messages groups.
func runCore(t *testing.T, factory Factory, opts Options) {
	run := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			if opts.Parallel {
				t.Parallel()
			}
			f(t)
		})
	}
	run("ClusterConfig", func(t *testing.T) { testClusterConfig(t, fresh(t, factory)) })
	run("ClusterSecret", func(t *testing.T) { testClusterSecret(t, factory, opts) })
	run("Runners", func(t *testing.T) { d, c := open(t, factory); testRunners(t, d, c) })
	run("StoreClock", func(t *testing.T) { d, c := open(t, factory); testStoreClock(t, d, c) })
	for _, mode := range opts.Modes {
		run("Locks/"+string(mode), func(t *testing.T) { testLocks(t, factory, opts, mode) })
	}
	for _, mode := range opts.Modes {
		run("Survey/"+string(mode), func(t *testing.T) { testSurvey(t, factory, opts, mode) })
	}
	for _, mode := range opts.Modes {
		run("Presence/"+string(mode), func(t *testing.T) { testPresence(t, factory, opts, mode) })
	}
	run("EnqueueDedupe", func(t *testing.T) { testEnqueueDedupe(t, fresh(t, factory)) })
	run("ClaimRules", func(t *testing.T) { testClaimRules(t, fresh(t, factory)) })
	run("ClaimConcurrent", func(t *testing.T) { testClaimConcurrent(t, factory, opts) })
	run("Fencing", func(t *testing.T) { testFencing(t, fresh(t, factory)) })
	run("ReleaseAndAttempts", func(t *testing.T) { d, c := open(t, factory); testReleaseAndAttempts(t, d, c) })
	run("DeadLetter", func(t *testing.T) { testDeadLetter(t, fresh(t, factory)) })
	run("Delayed", func(t *testing.T) { d, c := open(t, factory); testDelayed(t, d, c) })
	run("EnqueueClaimed", func(t *testing.T) { testEnqueueClaimed(t, fresh(t, factory)) })
	run("DrainStats", func(t *testing.T) { d, c := open(t, factory); testDrainStats(t, d, c) })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// must turns a (value, error) pair into the value, failing t on error:
// must(d.Claim(ctx, req))(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func locker(t *testing.T, d store.Driver, mode store.LockMode, owner string) store.Locker {
	t.Helper()
	l := must(d.NewLocker(ctxT(t), mode, owner))(t)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// own takes shard for owner in advisory mode and returns the locker+epoch.
func own(t *testing.T, d store.Driver, owner, shard string) (store.Locker, int64) {
	t.Helper()
	mode, _, err := d.ResolveLockMode(ctxT(t), store.LockAuto)
	check(t, err)
	l := locker(t, d, mode, owner)
	epoch, ok, err := l.Acquire(ctxT(t), shard, time.Minute)
	check(t, err)
	if !ok || epoch <= 0 {
		t.Fatalf("acquire %s for %s: ok=%v epoch=%d", shard, owner, ok, epoch)
	}
	return l, epoch
}

func msg(shard, typ, id string, payload string) *store.Message {
	return &store.Message{Shard: shard, EntityType: typ, EntityID: id, Tag: "t", Payload: []byte(payload), Headers: map[string]string{"h": "v"}}
}
