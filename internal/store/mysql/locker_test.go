// Lockers beyond the suite: a killed advisory session and long shard names.
package mysql_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
)

// The holder's reserved session is killed from another connection: the
// server drops its GET_LOCK at once, another locker takes the shard with a
// higher epoch, and the first locker's Refresh errors.
func TestAdvisoryKilledSession(t *testing.T) {
	ctx := ctxT(t)
	s, url := fresh(t, "mykill", quiet)
	s2 := open(t, url, quiet)
	a, err := s.NewLocker(ctx, store.LockAdvisory, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := s2.NewLocker(ctx, store.LockAdvisory, "b:1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const shard = "default/7"
	e1, ok, err := a.Acquire(ctx, shard, time.Minute)
	if err != nil || !ok {
		t.Fatalf("a acquire: ok=%v err=%v", ok, err)
	}
	if _, ok, err := b.Acquire(ctx, shard, time.Minute); err != nil || ok {
		t.Fatalf("b must not take a held lock: ok=%v err=%v", ok, err)
	}
	if _, err := s2.DB().ExecContext(ctx, "KILL ?", mysql.LockerConnID(a)); err != nil {
		t.Fatalf("kill: %v", err)
	}
	start := time.Now()
	var e2 int64
	for {
		e2, ok, err = b.Acquire(ctx, shard, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the killed session's lock was not released")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("takeover %v after the kill", time.Since(start))
	if e2 <= e1 {
		t.Fatalf("takeover epoch %d must exceed %d", e2, e1)
	}
	lost, err := a.Refresh(ctx, map[string]int64{shard: e1}, time.Minute)
	if err == nil {
		t.Fatalf("refresh on a killed session must fail, got lost=%v", lost)
	}
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("refresh error should be unavailable: %v", err)
	}
	ls, err := s.ShardLocks(ctx)
	if err != nil || len(ls) != 1 || ls[0].Owner != "b:1" || ls[0].Epoch != e2 {
		t.Fatalf("ledger %+v %v", ls, err)
	}
	if err := a.Close(); err != nil {
		t.Logf("close of a killed locker: %v", err)
	}
	if lost, err := b.Refresh(ctx, map[string]int64{shard: e2}, time.Minute); err != nil || len(lost) != 0 {
		t.Fatalf("b refresh: lost=%v err=%v", lost, err)
	}
}

// Shard names beyond GET_LOCK's 64 characters are hashed into the lock name,
// and Close clears the ledger rows it held.
func TestLongShardNames(t *testing.T) {
	ctx := ctxT(t)
	s, _ := fresh(t, "mylong", mysql.Options{Namespace: strings.Repeat("n", 40), Logger: quiet.Logger})
	for _, mode := range []store.LockMode{store.LockAdvisory, store.LockRow} {
		a, err := s.NewLocker(ctx, mode, "a:1")
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.NewLocker(ctx, mode, "b:1")
		if err != nil {
			t.Fatal(err)
		}
		long1 := "group-" + strings.Repeat("x", 150) + "/1"
		long2 := "group-" + strings.Repeat("x", 150) + "/2"
		e1, ok, err := a.Acquire(ctx, long1, time.Minute)
		if err != nil || !ok {
			t.Fatalf("%s: acquire: %v %v", mode, ok, err)
		}
		if _, ok, err := b.Acquire(ctx, long1, time.Minute); err != nil || ok {
			t.Fatalf("%s: b took a held long shard: %v %v", mode, ok, err)
		}
		e2, ok, err := b.Acquire(ctx, long2, time.Minute)
		if err != nil || !ok {
			t.Fatalf("%s: a different long shard must not collide: %v %v", mode, ok, err)
		}
		if lost, err := a.Refresh(ctx, map[string]int64{long1: e1}, time.Minute); err != nil || len(lost) != 0 {
			t.Fatalf("%s: refresh %v %v", mode, lost, err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		ls, err := s.ShardLocks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if l.Shard == long1 && l.Owner != "" {
				t.Fatalf("%s: Close must clear the ledger owner: %+v", mode, l)
			}
		}
		if _, ok, err := b.Acquire(ctx, long1, time.Minute); err != nil || !ok {
			t.Fatalf("%s: b after a closed: %v %v", mode, ok, err)
		}
		_ = e2
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
