// Scheduler behaviour on one or two replicas in-process: defaults,
// degradation, claims under clock skew, missed ticks, errors and shutdown.
package schedule

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
)

func noop(context.Context, time.Time) error { return nil }

// runsOf lists a schedule's rows oldest first.
func runsOf(t testing.TB, st Store, name string) []Run {
	t.Helper()
	rs, err := st.ScheduleRuns(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	return rs
}

func TestSingleFiresEveryTick(t *testing.T) {
	t.Parallel()
	st := NewMemoryStore()
	s := newTestScheduler(t, Config{ReplicaID: "solo", Store: st})
	var fired atomic.Int32
	if err := s.Register(Schedule{Name: "tick", Spec: "* * * * * *", Func: func(_ context.Context, at time.Time) error {
		if at.Nanosecond() != 0 {
			t.Errorf("scheduledAt %v is not on a second", at)
		}
		fired.Add(1)
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	stop := runScheduler(t, s)
	time.Sleep(2600 * time.Millisecond)
	stop()
	rs := runsOf(t, st, "tick")
	if len(rs) < 2 || int(fired.Load()) != len(rs) {
		t.Fatalf("fired %d, rows %+v", fired.Load(), rs)
	}
	for i, r := range rs {
		if r.Outcome != OutcomeSingle || r.Status != StatusSucceeded || r.ReplicaID != "solo" {
			t.Fatalf("row %+v", r)
		}
		if i > 0 && r.ScheduledAt.Sub(rs[i-1].ScheduledAt) != time.Second {
			t.Fatalf("gap between %v and %v", rs[i-1].ScheduledAt, r.ScheduledAt)
		}
	}
	if got := s.Stats()["tick"][OutcomeSingle]; got != int64(len(rs)) {
		t.Fatalf("stats %d, rows %d", got, len(rs))
	}
}

func TestDefaultCoordination(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dialect store.Dialect
		want    Coordination
	}{{store.Postgres, AdvisoryLock}, {store.MariaDB, AdvisoryLock}, {store.MySQL, AdvisoryLock}, {store.SQLite, Single}, {store.Memory, Single}} {
		s := newTestScheduler(t, Config{ReplicaID: "r", Store: dialectStore{NewMemoryStore(), c.dialect}})
		if got := s.DefaultCoordination(); got != c.want {
			t.Errorf("%s: default %s, want %s", c.dialect, got, c.want)
		}
	}
	s := newTestScheduler(t, Config{ReplicaID: "r", Store: dialectStore{NewMemoryStore(), store.Postgres}, Default: Single})
	if got := s.DefaultCoordination(); got != Single {
		t.Errorf("app override: %s", got)
	}
}

// dialectStore lets a memory store pose as another dialect, for defaults.
type dialectStore struct {
	*memory.Store
	d store.Dialect
}

func (d dialectStore) Dialect() store.Dialect { return d.d }

// TestClusterDegradesWithAWarning: where cluster mode cannot work, a
// schedule asking for it fires as advisoryLock on a store other processes
// share (still once per tick across them: single there would fire on every
// instance), as single on a store only this process uses; the warning says
// which and why.
func TestClusterDegradesWithAWarning(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		dialect store.Dialect
		firer   ClusterFirer
		want    Coordination
		outcome Outcome
		reason  string
	}{
		{"single-process runner storage on postgres", store.Postgres, nil, AdvisoryLock, OutcomeWonLock, "single-process runner storage"},
		{"sqlite", store.SQLite, neverFirer{}, Single, OutcomeSingle, "the sqlite store has no cluster storage"},
		{"memory", store.Memory, neverFirer{}, Single, OutcomeSingle, "the memory store has no cluster storage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := &syncBuffer{}
			st := dialectStore{NewMemoryStore(), c.dialect}
			s := newTestScheduler(t, Config{ReplicaID: "r", Store: st, Cluster: c.firer, Default: Cluster,
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if s.DefaultCoordination() != c.want {
				t.Fatalf("default %s", s.DefaultCoordination())
			}
			if err := s.Register(Schedule{Name: "c", Spec: "* * * * * *", Coordination: Cluster, Func: noop}); err != nil {
				t.Fatal(err)
			}
			stop := runScheduler(t, s)
			time.Sleep(1300 * time.Millisecond)
			stop()
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "degrading the default to "+string(c.want)) ||
				!strings.Contains(logs.String(), "firing as "+string(c.want)) || !strings.Contains(logs.String(), c.reason) {
				t.Fatalf("no boot warning:\n%s", logs)
			}
			rs := runsOf(t, st, "c")
			if len(rs) == 0 || rs[0].Outcome != c.outcome {
				t.Fatalf("runs %+v", rs)
			}
		})
	}
}

// neverFirer accepts cluster schedules and never fires them.
type neverFirer struct{}

func (neverFirer) ScheduleCluster(context.Context, ClusterSchedule) error { return nil }

// TestClaimsUnderClockSkew runs two replicas on one database, one whose
// clock is 700 ms ahead: each tick is still fired exactly once. PostgreSQL
// and MariaDB share one window.
func TestClaimsUnderClockSkew(t *testing.T) {
	t.Parallel()
	type setup struct {
		name  string
		st    Store
		fired *atomic.Int32
	}
	var setups []setup
	var stops []func()
	for _, sc := range storeCases(t, "skew", false) {
		if sc.name == "sqlite" {
			continue
		}
		su := setup{name: sc.name, st: sc.open(t), fired: &atomic.Int32{}}
		ahead := func() time.Time { return time.Now().Add(700 * time.Millisecond) }
		for i, now := range []func() time.Time{time.Now, ahead} {
			s := newTestScheduler(t, Config{ReplicaID: []string{"exact", "ahead"}[i], Store: sc.open(t), Now: now})
			if err := s.Register(Schedule{Name: "skew", Spec: "* * * * * *", Overlap: OverlapParallel, Func: func(context.Context, time.Time) error {
				su.fired.Add(1)
				return nil
			}}); err != nil {
				t.Fatal(err)
			}
			stops = append(stops, runScheduler(t, s))
		}
		setups = append(setups, su)
	}
	time.Sleep(4200 * time.Millisecond)
	for _, stop := range stops {
		stop()
	}
	for _, su := range setups {
		t.Run(su.name, func(t *testing.T) {
			rs := runsOf(t, su.st, "skew")
			won := map[int64]int{}
			lost := map[int64]int{}
			for _, r := range rs {
				switch r.Outcome {
				case OutcomeWonLock:
					won[r.ScheduledAt.Unix()]++
				case OutcomeLostLock:
					lost[r.ScheduledAt.Unix()]++
				default:
					t.Fatalf("unexpected row %+v", r)
				}
			}
			if len(won) < 3 {
				t.Fatalf("only %d ticks won: %+v", len(won), rs)
			}
			for b, n := range won {
				if n != 1 {
					t.Fatalf("tick %d won %d times", b, n)
				}
			}
			for b, n := range lost {
				if n != 1 || won[b] != 1 {
					t.Fatalf("tick %d: %d lost, %d won", b, n, won[b])
				}
			}
			if int(su.fired.Load()) != len(won) {
				t.Fatalf("fired %d for %d won ticks", su.fired.Load(), len(won))
			}
		})
	}
}

func TestMissedTicks(t *testing.T) {
	t.Parallel()
	st := openURL(t, "sqlite:"+t.TempDir()+"/missed.db")
	ctx := context.Background()
	// The app last fired both schedules 6 s ago, then was down.
	last := time.Now().Truncate(time.Second).Add(-6 * time.Second)
	for _, name := range []string{"nocatch", "catch", "limited"} {
		if _, err := st.InsertScheduleRun(ctx, Run{Schedule: name, ScheduledAt: last, ReplicaID: "old", Outcome: OutcomeSingle, Status: StatusSucceeded}); err != nil {
			t.Fatal(err)
		}
	}
	s := newTestScheduler(t, Config{ReplicaID: "r", Store: st, CatchUpLimit: 3})
	var caught atomic.Int32
	startAt := time.Now()
	for _, sch := range []Schedule{
		{Name: "nocatch", Spec: "* * * * * *", Func: noop, Overlap: OverlapParallel},
		{Name: "catch", Spec: "* * * * * *", CatchUp: true, Overlap: OverlapParallel, Func: func(_ context.Context, at time.Time) error {
			if !at.After(startAt) {
				caught.Add(1)
			}
			return nil
		}},
	} {
		if err := s.Register(sch); err != nil {
			t.Fatal(err)
		}
	}
	stop := runScheduler(t, s)
	time.Sleep(1200 * time.Millisecond)
	stop()
	missed := 0
	for _, r := range runsOf(t, st, "nocatch") {
		if r.Outcome == OutcomeMissed {
			missed++
			if r.Status != StatusSkipped || !r.ScheduledAt.After(last) {
				t.Fatalf("missed row %+v", r)
			}
		}
	}
	// 5 or 6 ticks went by before start; CatchUpLimit 3 records the newest 3.
	if missed != 3 || s.Stats()["nocatch"][OutcomeMissed] < 5 {
		t.Fatalf("missed rows %d, stats %v", missed, s.Stats()["nocatch"])
	}
	if caught.Load() != 3 {
		t.Fatalf("caught up %d ticks", caught.Load())
	}
	for _, r := range runsOf(t, st, "catch") {
		if r.Outcome == OutcomeMissed {
			t.Fatalf("catch-up schedule recorded a miss: %+v", r)
		}
	}
}

// TestLateWakeMissesTicks jumps the replica's clock forward: the ticks that
// went by are missed, the newest one fires.
func TestLateWakeMissesTicks(t *testing.T) {
	t.Parallel()
	st := NewMemoryStore()
	var offset atomic.Int64
	s := newTestScheduler(t, Config{ReplicaID: "r", Store: st, Now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }})
	if err := s.Register(Schedule{Name: "late", Spec: "* * * * * *", Func: noop, Overlap: OverlapParallel}); err != nil {
		t.Fatal(err)
	}
	stop := runScheduler(t, s)
	time.Sleep(1100 * time.Millisecond)
	offset.Store(int64(4 * time.Second))
	time.Sleep(1500 * time.Millisecond)
	stop()
	var missed, fired int
	for _, r := range runsOf(t, st, "late") {
		switch r.Outcome {
		case OutcomeMissed:
			missed++
		case OutcomeSingle:
			fired++
		}
	}
	// 4 s went by at once: the ticks more than MissedAfter (2 s) overdue are
	// missed, the younger ones fire late.
	if missed < 1 || missed > 3 || fired < 3 {
		t.Fatalf("missed %d, fired %d: %+v", missed, fired, runsOf(t, st, "late"))
	}
}

func TestFailuresAndShutdownAreRecorded(t *testing.T) {
	t.Parallel()
	st := NewMemoryStore()
	s := newTestScheduler(t, Config{ReplicaID: "r", Store: st})
	started := make(chan struct{}, 10)
	for _, sch := range []Schedule{
		{Name: "fails", Spec: "* * * * * *", Func: func(context.Context, time.Time) error { return errors.New("disk full") }},
		{Name: "panics", Spec: "* * * * * *", Func: func(context.Context, time.Time) error { panic("oh no") }},
		{Name: "slow", Spec: "* * * * * *", Overlap: OverlapQueue, Func: func(ctx context.Context, _ time.Time) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}},
	} {
		if err := s.Register(sch); err != nil {
			t.Fatal(err)
		}
	}
	stop := runScheduler(t, s)
	<-started
	time.Sleep(1200 * time.Millisecond) // the next slow tick is queued
	stop()
	check := func(name string, want func(Run) bool) {
		t.Helper()
		rs := runsOf(t, st, name)
		if len(rs) == 0 || !want(rs[0]) {
			t.Fatalf("%s: %+v", name, rs)
		}
	}
	check("fails", func(r Run) bool { return r.Status == StatusFailed && r.Error == "disk full" })
	check("panics", func(r Run) bool { return r.Status == StatusFailed && strings.Contains(r.Error, "oh no") })
	check("slow", func(r Run) bool {
		return r.Status == StatusFailed && strings.Contains(r.Error, "context canceled") && !r.Finished.IsZero()
	})
	var cancelled bool
	for _, r := range runsOf(t, st, "slow") {
		cancelled = cancelled || (r.Outcome == OutcomeQueued && r.Status == StatusCancelled)
		if r.Status.Live() {
			t.Fatalf("live row after shutdown: %+v", r)
		}
	}
	if !cancelled {
		t.Fatalf("queued tick not cancelled: %+v", runsOf(t, st, "slow"))
	}
}

func TestRegisterWhileRunning(t *testing.T) {
	t.Parallel()
	st := NewMemoryStore()
	s := newTestScheduler(t, Config{ReplicaID: "r", Store: st})
	stop := runScheduler(t, s)
	time.Sleep(100 * time.Millisecond)
	if err := s.Register(Schedule{Name: "late-comer", Spec: "* * * * * *", Func: noop}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	stop()
	if rs := runsOf(t, st, "late-comer"); len(rs) == 0 || rs[0].Status != StatusSucceeded {
		t.Fatalf("runs %+v", rs)
	}
	if err := s.Run(context.Background()); err == nil {
		t.Fatal("second Run accepted")
	}
}
