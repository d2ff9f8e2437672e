// A replica that dies between winning a tick's claim and firing it: the
// tick is fired late by a survivor, once, in advisoryLock coordination.
package schedule

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dyingStore is replica a's store: once a wins the claim of a tick at or
// after dieAt, every later call of a blocks until the test ends, as if
// the process had died right after its claim. The survivor's store (slow)
// claims 200 ms late, so that a wins every tick while it lives.
type dyingStore struct {
	Store
	dieAt time.Time
	dead  atomic.Pointer[time.Time] // the tick a won last
	gone  chan struct{}
}

func (d *dyingStore) halt() {
	if d.dead.Load() != nil {
		<-d.gone
	}
}

func (d *dyingStore) ClaimScheduleTick(ctx context.Context, c Claim) (bool, error) {
	d.halt()
	won, err := d.Store.ClaimScheduleTick(ctx, c)
	if won && !c.ScheduledAt.Before(d.dieAt) && d.dead.Load() == nil {
		at := c.ScheduledAt
		d.dead.Store(&at)
		d.halt()
	}
	return won, err
}

func (d *dyingStore) InsertScheduleRun(ctx context.Context, r Run) (int64, error) {
	d.halt()
	return d.Store.InsertScheduleRun(ctx, r)
}

type slowStore struct{ Store }

func (s slowStore) ClaimScheduleTick(ctx context.Context, c Claim) (bool, error) {
	time.Sleep(200 * time.Millisecond)
	return s.Store.ClaimScheduleTick(ctx, c)
}

func TestAdvisoryLockTickOfADeadWinnerFiresLate(t *testing.T) {
	for _, sc := range storeCases(t, "takeover", false) {
		if sc.name == "sqlite" {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			st := sc.open(t)
			gone := make(chan struct{})
			defer close(gone)
			a := &dyingStore{Store: st, dieAt: time.Now().Truncate(time.Second).Add(2 * time.Second), gone: gone}
			var mu sync.Mutex
			fired := map[int64][]string{}
			fn := func(replica string) func(context.Context, time.Time) error {
				return func(_ context.Context, at time.Time) error {
					mu.Lock()
					fired[at.Unix()] = append(fired[at.Unix()], replica)
					mu.Unlock()
					return nil
				}
			}
			for _, r := range []struct {
				name string
				st   Store
			}{{"a", a}, {"b", slowStore{st}}} {
				s := newTestScheduler(t, Config{ReplicaID: r.name, Store: r.st, Default: AdvisoryLock})
				if err := s.Register(Schedule{Name: "tick", Spec: "* * * * * *", Overlap: OverlapParallel, Func: fn(r.name)}); err != nil {
					t.Fatal(err)
				}
				runScheduler(t, s)
			}
			// b's takeover of a's last tick comes once a's rows would no
			// longer count (3 heartbeats of 200 ms), a few seconds at most.
			time.Sleep(6 * time.Second)
			dead := a.dead.Load()
			if dead == nil {
				t.Fatal("a never won a tick to die on")
			}
			mu.Lock()
			defer mu.Unlock()
			var first, last int64
			for at := range fired {
				if first == 0 || at < first {
					first = at
				}
				last = max(last, at)
			}
			for at := first; at <= last; at++ {
				if len(fired[at]) != 1 {
					t.Errorf("tick %d fired by %v, want once (a died after claiming tick %d)", at, fired[at], dead.Unix())
				}
			}
			if got := fired[dead.Unix()]; len(got) != 1 || got[0] != "b" {
				t.Fatalf("the tick a claimed and died on was fired by %v, want b, late", got)
			}
		})
	}
}
