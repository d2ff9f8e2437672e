// Cluster cases: the cluster config and secret, runner rows.

package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func testClusterConfig(t *testing.T, d store.Driver) {
	ctx := ctxT(t)
	got := must(d.EnsureClusterConfig(ctx, store.ClusterConfig{ShardCount: 300, Groups: []string{"default", "b"}}))(t)
	if got.ShardCount != 300 || !slices.Equal(got.Groups, []string{"default", "b"}) {
		t.Fatalf("first ensure returned %+v", got)
	}
	got = must(d.EnsureClusterConfig(ctx, store.ClusterConfig{ShardCount: 16, Groups: []string{"x"}}))(t)
	if got.ShardCount != 300 || !slices.Equal(got.Groups, []string{"default", "b"}) {
		t.Fatalf("second ensure must return the stored row, got %+v", got)
	}
	check(t, d.Ping(ctx))
	if _, err := d.Now(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.ResolveLockMode(ctx, "bogus"); !errors.Is(err, errs.ErrInvalidConfig) {
		t.Fatalf("unknown lock mode: want invalid_config, got %v", err)
	}
}

// testClusterSecret: the first writer wins, later and concurrent callers
// (other handles: other processes) get the stored secret.
func testClusterSecret(t *testing.T, factory Factory, opts Options) {
	ctx := ctxT(t)
	d, clock := open(t, factory)
	handles := []store.Driver{d, d}
	if opts.Reopen != nil {
		handles = append(handles, second(t, opts, d, clock), second(t, opts, d, clock))
	}
	got := make([]string, len(handles))
	var wg sync.WaitGroup
	errc := make(chan error, len(handles))
	for i, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := h.EnsureClusterSecret(ctx, fmt.Sprintf("candidate-%d-%064d", i, i))
			got[i] = s
			errc <- err
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		check(t, err)
	}
	if !strings.HasPrefix(got[0], "candidate-") || len(got[0]) != len("candidate-0-")+64 {
		t.Fatalf("stored secret %q is none of the candidates", got[0])
	}
	for i, s := range got {
		if s != got[0] {
			t.Fatalf("handle %d got secret %q, handle 0 %q: concurrent first boots disagree", i, s, got[0])
		}
	}
	if s := must(d.EnsureClusterSecret(ctx, "late"))(t); s != got[0] {
		t.Fatalf("a later candidate replaced the stored secret: %q", s)
	}
}

func testRunners(t *testing.T, d store.Driver, clock *Clock) {
	ctx := ctxT(t)
	r := store.Runner{Address: "10.0.0.1:34000", ReplicaID: "pod-a", Groups: []string{"default"}, EntityTypes: []string{"a", "b"}, InspectAddr: "127.0.0.1:9000", Version: "v1", Healthy: true, Meta: `{"k":1}`}
	check(t, d.RegisterRunner(ctx, r))
	r.EntityTypes = []string{"a", "b", "c"}
	check(t, d.RegisterRunner(ctx, r)) // upsert by address
	check(t, d.RegisterRunner(ctx, store.Runner{Address: "10.0.0.2:34000", ReplicaID: "pod-b", Healthy: true}))
	rs := must(d.ListRunners(ctx))(t)
	if len(rs) != 2 || rs[0].Address != "10.0.0.1:34000" || rs[1].Address != "10.0.0.2:34000" {
		t.Fatalf("runners: %+v", rs)
	}
	if !slices.Equal(rs[0].EntityTypes, []string{"a", "b", "c"}) || rs[0].ReplicaID != "pod-a" || rs[0].InspectAddr != "127.0.0.1:9000" || rs[0].Meta != `{"k":1}` || !rs[0].Healthy {
		t.Fatalf("runner fields not kept: %+v", rs[0])
	}
	if rs[0].HeartbeatAge < -time.Second || rs[0].HeartbeatAge > 5*time.Second {
		t.Fatalf("heartbeat age by the store clock should be ~0, got %v", rs[0].HeartbeatAge)
	}
	mode, _, err := d.ResolveLockMode(ctx, store.LockAuto)
	check(t, err)
	l := locker(t, d, mode, r.Address)
	clock.Advance(2 * time.Second)
	check(t, l.Heartbeat(ctx, r.Address))
	rs = must(d.ListRunners(ctx))(t)
	if rs[0].HeartbeatAge > 500*time.Millisecond || rs[1].HeartbeatAge < time.Second {
		t.Fatalf("heartbeat did not move only runner a: %v %v", rs[0].HeartbeatAge, rs[1].HeartbeatAge)
	}
	check(t, d.DeleteRunner(ctx, "10.0.0.2:34000"))
	if err := l.Heartbeat(ctx, "10.0.0.2:34000"); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("heartbeat of a deleted runner: want not_found, got %v", err)
	}
	if rs = must(d.ListRunners(ctx))(t); len(rs) != 1 {
		t.Fatalf("after delete: %+v", rs)
	}
}

// testStoreClock: the store reads the clock it was given, not its own: a
// day ahead of real time, its Now and a lease's times follow the clock.
func testStoreClock(t *testing.T, d store.Driver, clock *Clock) {
	ctx := ctxT(t)
	clock.Advance(24 * time.Hour)
	before := clock.Now().Add(-time.Millisecond)
	now := must(d.Now(ctx))(t)
	if now.Before(before) || now.After(clock.Now().Add(time.Millisecond)) {
		t.Fatalf("store Now %v, want the clock's %v", now, before)
	}
	l := locker(t, d, store.LockRow, "a:1")
	if _, ok, err := l.Acquire(ctx, "default/1", time.Minute); err != nil || !ok {
		t.Fatalf("acquire: ok=%v err=%v", ok, err)
	}
	after := clock.Now().Add(time.Millisecond)
	ls := must(d.ShardLocks(ctx))(t)
	if len(ls) != 1 || ls[0].AcquiredAt.Before(before) || ls[0].AcquiredAt.After(after) || ls[0].ExpiresAt.Sub(ls[0].AcquiredAt) != time.Minute {
		t.Fatalf("a lease taken a day ahead runs on the clock, acquired in [%v, %v] for a minute: %+v", before, after, ls)
	}
}
