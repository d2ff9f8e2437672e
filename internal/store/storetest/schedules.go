package storetest

// Schedules (store.Schedules): claims, run rows, definitions and their
// garbage collection. No case sleeps out a duration: heartbeats and ages
// are judged "as of" instants read from the store's clock (schedCut), so
// rows stamped before the instant count as old and rows stamped after it
// as young.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// runSchedules runs the schedule cases; opts.Reopen's handles, when set,
// are other processes, or other nodes.
func runSchedules(t *testing.T, factory Factory, opts Options) {
	get := func(t *testing.T) (store.Driver, store.Schedules, *Clock) {
		d, clock := open(t, factory)
		return d, d, clock
	}
	t.Run("ClaimOnce", func(t *testing.T) { testScheduleClaims(t, factory, opts) })
	t.Run("Define", func(t *testing.T) { d, s, c := get(t); testScheduleDefine(t, d, s, c) })
	t.Run("InsertStamps", func(t *testing.T) { d, s, c := get(t); testScheduleInsert(t, d, s, c) })
	t.Run("StartAndFinish", func(t *testing.T) { d, s, c := get(t); testScheduleStartFinish(t, d, s, c) })
	t.Run("HeartbeatAndActive", func(t *testing.T) { d, s, c := get(t); testScheduleActive(t, d, s, c) })
	t.Run("LastScheduledAt", func(t *testing.T) { _, s, _ := get(t); testScheduleLast(t, s) })
	t.Run("RunsOrder", func(t *testing.T) { _, s, _ := get(t); testScheduleRuns(t, s) })
	t.Run("LatestRuns", func(t *testing.T) { _, s, _ := get(t); testScheduleLatestRuns(t, s) })
	t.Run("Summaries", func(t *testing.T) { _, s, _ := get(t); testScheduleSummaries(t, s) })
	t.Run("Collect", func(t *testing.T) { d, s, c := get(t); testScheduleCollect(t, d, s, c) })
}

// schedCut reads the store's clock between two short moves of it: every
// row stamped before the call is older than the instant returned, every
// row stamped after it younger (the moves cover the millisecond rounding
// of the SQL stores' schedule columns).
func schedCut(t *testing.T, d store.Driver, clock *Clock) time.Time {
	t.Helper()
	clock.Advance(3 * time.Millisecond)
	now := must(d.Now(ctxT(t)))(t)
	clock.Advance(3 * time.Millisecond)
	return now
}

// schedTick is the tick the cases record runs for.
var schedTick = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func schedRun(schedule string, at time.Time, replica string, o store.ScheduleOutcome, st store.ScheduleStatus) store.ScheduleRun {
	return store.ScheduleRun{Schedule: schedule, ScheduledAt: at, ReplicaID: replica, Outcome: o, Status: st}
}

func insertRun(t *testing.T, s store.Schedules, r store.ScheduleRun) int64 {
	t.Helper()
	id, err := s.InsertScheduleRun(ctxT(t), r)
	check(t, err)
	if id <= 0 {
		t.Fatalf("insert %+v: id %d", r, id)
	}
	return id
}

// runByID reads one run of schedule back.
func runByID(t *testing.T, s store.Schedules, schedule string, id int64) store.ScheduleRun {
	t.Helper()
	for _, r := range must(s.ScheduleRuns(ctxT(t), schedule, 0))(t) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("run %d of %s not found", id, schedule)
	return store.ScheduleRun{}
}

// between fails unless from < at < to, instants of the store's clock.
func between(t *testing.T, what string, at, from, to time.Time) {
	t.Helper()
	if !at.After(from) || !at.Before(to) {
		t.Fatalf("%s %v is not between %v and %v (store clock)", what, at, from, to)
	}
}

// testScheduleClaims: of many replicas (goroutines on every handle)
// bidding for one tick, exactly one wins; the next tick is a new claim.
func testScheduleClaims(t *testing.T, factory Factory, opts Options) {
	ctx := ctxT(t)
	d, clock := open(t, factory)
	handles := []store.Schedules{d}
	if opts.Reopen != nil {
		handles = append(handles, second(t, opts, d, clock), second(t, opts, d, clock))
	}
	at := time.Date(2026, 5, 1, 10, 0, 7, 0, time.UTC)
	if k := store.ScheduleClaimKey("claims", at); k != "claims@1777629607" {
		t.Fatalf("claim key %q", k)
	}
	if k := (store.ScheduleClaim{Schedule: "claims", ScheduledAt: at.Add(999 * time.Millisecond)}).Key(); k != "claims@1777629607" {
		t.Fatalf("claim key of a tick within the second %q", k)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := handles[i%len(handles)]
			won, err := h.ClaimScheduleTick(ctx, store.ScheduleClaim{Schedule: "claims", ScheduledAt: at, ReplicaID: fmt.Sprintf("r%d", i)})
			if err != nil {
				t.Errorf("claim by r%d: %v", i, err)
			}
			if won {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d replicas won one tick", wins.Load())
	}
	s := handles[0]
	if won := must(s.ClaimScheduleTick(ctx, store.ScheduleClaim{Schedule: "claims", ScheduledAt: at, ReplicaID: "late"}))(t); won {
		t.Fatal("a claimed tick was won again")
	}
	if won := must(s.ClaimScheduleTick(ctx, store.ScheduleClaim{Schedule: "claims", ScheduledAt: at.Add(time.Second), ReplicaID: "r0"}))(t); !won {
		t.Fatal("the next tick's claim was not won")
	}
	if won := must(s.ClaimScheduleTick(ctx, store.ScheduleClaim{Schedule: "other", ScheduledAt: at, ReplicaID: "r0"}))(t); !won {
		t.Fatal("another schedule's claim of the same instant was not won")
	}
	if n := must(s.CountScheduleClaims(ctx, "claims"))(t); n != 2 {
		t.Fatalf("claims of claims: %d, want 2", n)
	}
	if n := must(s.CountScheduleClaims(ctx, "nothing"))(t); n != 0 {
		t.Fatalf("claims of an unknown schedule: %d", n)
	}
}

// testScheduleDefine: a definition is upserted by name, the last
// registration wins, UpdatedAt is the store's now.
func testScheduleDefine(t *testing.T, d store.Driver, s store.Schedules, clock *Clock) {
	ctx := ctxT(t)
	def := store.ScheduleDefinition{Name: "life", Spec: "* * * * * *", TimeZone: "UTC", Coordination: "advisoryLock", Overlap: "skip", ReplicaID: "a"}
	check(t, s.DefineSchedule(ctx, def))
	from := schedCut(t, d, clock)
	def.Spec, def.Overlap, def.CatchUp, def.ReplicaID, def.TimeZone = "@every 5s", "queue", true, "b", "Europe/Paris"
	check(t, s.DefineSchedule(ctx, def))
	to := schedCut(t, d, clock)
	sums := must(s.ScheduleSummaries(ctx))(t)
	if len(sums) != 1 || sums[0].Name != "life" || sums[0].Definition == nil {
		t.Fatalf("summaries after two definitions of one schedule: %+v", sums)
	}
	got := *sums[0].Definition
	between(t, "updatedAt", got.UpdatedAt, from, to)
	got.UpdatedAt = time.Time{}
	if got != def {
		t.Fatalf("definition %+v, want the last one %+v", got, def)
	}
	if sums[0].Last != nil || len(sums[0].Counts) != 0 {
		t.Fatalf("a schedule without runs: %+v", sums[0])
	}
}

// testScheduleInsert: what Insert stamps depends on the status; the
// caller's fields come back as given.
func testScheduleInsert(t *testing.T, d store.Driver, s store.Schedules, clock *Clock) {
	from := schedCut(t, d, clock)
	running := insertRun(t, s, schedRun("ins", schedTick, "a", store.ScheduleOutcomeWonLock, store.ScheduleRunning))
	queued := insertRun(t, s, schedRun("ins", schedTick.Add(time.Second), "b", store.ScheduleOutcomeQueued, store.ScheduleQueued))
	skipped := schedRun("ins", schedTick.Add(2*time.Second), "c", store.ScheduleOutcomeSkippedOverlap, store.ScheduleSkipped)
	skipped.Error = "an earlier run was still going"
	skippedID := insertRun(t, s, skipped)
	to := schedCut(t, d, clock)
	if running == queued || queued == skippedID || running == skippedID {
		t.Fatalf("ids not distinct: %d %d %d", running, queued, skippedID)
	}

	r := runByID(t, s, "ins", running)
	between(t, "started of a running run", r.Started, from, to)
	if !r.Finished.IsZero() || r.Status != store.ScheduleRunning || r.Outcome != store.ScheduleOutcomeWonLock ||
		r.ReplicaID != "a" || !r.ScheduledAt.Equal(schedTick) || r.Schedule != "ins" || r.Error != "" {
		t.Fatalf("running run: %+v", r)
	}
	q := runByID(t, s, "ins", queued)
	if !q.Started.IsZero() || !q.Finished.IsZero() || q.Status != store.ScheduleQueued || !q.ScheduledAt.Equal(schedTick.Add(time.Second)) {
		t.Fatalf("queued run: %+v", q)
	}
	k := runByID(t, s, "ins", skippedID)
	between(t, "started of a skipped row", k.Started, from, to)
	between(t, "finished of a skipped row", k.Finished, from, to)
	if k.Status != store.ScheduleSkipped || k.Outcome != store.ScheduleOutcomeSkippedOverlap || k.Error != skipped.Error {
		t.Fatalf("skipped row: %+v", k)
	}
}

// testScheduleStartFinish: only a queued run starts, once; Finish stamps
// the end and the error text; unknown ids change nothing.
func testScheduleStartFinish(t *testing.T, d store.Driver, s store.Schedules, clock *Clock) {
	ctx := ctxT(t)
	queued := insertRun(t, s, schedRun("sf", schedTick, "a", store.ScheduleOutcomeQueued, store.ScheduleQueued))
	running := insertRun(t, s, schedRun("sf", schedTick, "b", store.ScheduleOutcomeWonLock, store.ScheduleRunning))
	from := schedCut(t, d, clock)
	if !must(s.StartScheduleRun(ctx, queued))(t) {
		t.Fatal("queued run did not start")
	}
	startedAt := schedCut(t, d, clock)
	if must(s.StartScheduleRun(ctx, queued))(t) {
		t.Fatal("a running run started twice")
	}
	if must(s.StartScheduleRun(ctx, running))(t) {
		t.Fatal("a run inserted running started")
	}
	if must(s.StartScheduleRun(ctx, queued+running+1000))(t) {
		t.Fatal("an unknown run started")
	}
	q := runByID(t, s, "sf", queued)
	between(t, "started of a started run", q.Started, from, startedAt)
	if q.Status != store.ScheduleRunning || !q.Finished.IsZero() || q.Outcome != store.ScheduleOutcomeQueued {
		t.Fatalf("started run: %+v", q)
	}

	check(t, s.FinishScheduleRun(ctx, running, store.ScheduleFailed, "boom\nstack"))
	check(t, s.FinishScheduleRun(ctx, queued, store.ScheduleSucceeded, ""))
	to := schedCut(t, d, clock)
	check(t, s.FinishScheduleRun(ctx, queued+running+1000, store.ScheduleFailed, "nobody"))
	f := runByID(t, s, "sf", running)
	between(t, "finished of a failed run", f.Finished, startedAt, to)
	if f.Status != store.ScheduleFailed || f.Error != "boom\nstack" || !f.Started.Before(from) {
		t.Fatalf("failed run: %+v", f)
	}
	ok := runByID(t, s, "sf", queued)
	between(t, "finished of a succeeded run", ok.Finished, startedAt, to)
	if ok.Status != store.ScheduleSucceeded || ok.Error != "" || !ok.Started.Equal(q.Started) {
		t.Fatalf("succeeded run: %+v", ok)
	}
	if n := len(must(s.ScheduleRuns(ctx, "sf", 0))(t)); n != 2 {
		t.Fatalf("finishing an unknown run made a row: %d rows", n)
	}
}

// testScheduleActive: live runs count while their heartbeat is after the
// cut-off; a replica's heartbeat refreshes only its own live runs.
func testScheduleActive(t *testing.T, d store.Driver, s store.Schedules, clock *Clock) {
	ctx := ctxT(t)
	active := func(schedule string, since time.Time) store.ScheduleActivity {
		t.Helper()
		return must(s.ActiveScheduleRuns(ctx, schedule, since))(t)
	}
	before := schedCut(t, d, clock)
	runA := insertRun(t, s, schedRun("life", schedTick, "a", store.ScheduleOutcomeWonLock, store.ScheduleRunning))
	queuedB := insertRun(t, s, schedRun("life", schedTick.Add(time.Second), "b", store.ScheduleOutcomeQueued, store.ScheduleQueued))
	insertRun(t, s, schedRun("life", schedTick.Add(time.Second), "a", store.ScheduleOutcomeLostLock, store.ScheduleSkipped))
	insertRun(t, s, schedRun("other", schedTick, "a", store.ScheduleOutcomeWonLock, store.ScheduleRunning))
	if a := active("life", before); a != (store.ScheduleActivity{Running: 1, Queued: 1}) {
		t.Fatalf("active: %+v", a)
	}
	cut := schedCut(t, d, clock)
	if a := active("life", cut); a != (store.ScheduleActivity{}) {
		t.Fatalf("rows whose heartbeat is before the cut-off still count: %+v", a)
	}
	check(t, s.HeartbeatScheduleRuns(ctx, "a"))
	if a := active("life", cut); a != (store.ScheduleActivity{Running: 1}) {
		t.Fatalf("after a's heartbeat: %+v", a)
	}
	if a := active("other", cut); a != (store.ScheduleActivity{Running: 1}) {
		t.Fatalf("a's heartbeat covers every schedule of a: %+v", a)
	}
	if r := runByID(t, s, "life", runA); !r.Finished.IsZero() || r.Status != store.ScheduleRunning {
		t.Fatalf("a heartbeat changed the run: %+v", r)
	}
	check(t, s.FinishScheduleRun(ctx, runA, store.ScheduleSucceeded, ""))
	check(t, s.HeartbeatScheduleRuns(ctx, "a"))
	if a := active("life", before); a != (store.ScheduleActivity{Queued: 1}) {
		t.Fatalf("a finished run still counts: %+v", a)
	}
	cut = schedCut(t, d, clock)
	must(s.StartScheduleRun(ctx, queuedB))(t)
	if a := active("life", cut); a != (store.ScheduleActivity{Running: 1}) {
		t.Fatalf("starting a queued run refreshes its heartbeat: %+v", a)
	}
	if a := active("nothing", before); a != (store.ScheduleActivity{}) {
		t.Fatalf("an unknown schedule: %+v", a)
	}
}

// testScheduleLast: the latest tick at or before the bound, by any
// replica and of any outcome.
func testScheduleLast(t *testing.T, s store.Schedules) {
	ctx := ctxT(t)
	insertRun(t, s, schedRun("last", schedTick, "a", store.ScheduleOutcomeWonLock, store.ScheduleSucceeded))
	insertRun(t, s, schedRun("last", schedTick.Add(time.Second), "b", store.ScheduleOutcomeLostLock, store.ScheduleSkipped))
	insertRun(t, s, schedRun("other", schedTick.Add(time.Hour), "a", store.ScheduleOutcomeWonLock, store.ScheduleSucceeded))
	for _, c := range []struct {
		notAfter time.Time
		want     time.Time
	}{
		{schedTick.Add(time.Hour), schedTick.Add(time.Second)},
		{schedTick.Add(time.Second), schedTick.Add(time.Second)}, // at the bound
		{schedTick.Add(500 * time.Millisecond), schedTick},
		{schedTick.Add(-time.Millisecond), time.Time{}},
	} {
		last, ok, err := s.LastScheduledAt(ctx, "last", c.notAfter)
		check(t, err)
		if ok != !c.want.IsZero() || (ok && !last.Equal(c.want)) {
			t.Fatalf("last not after %v: %v %v, want %v", c.notAfter, last, ok, c.want)
		}
	}
	if _, ok := must3(s.LastScheduledAt(ctx, "nothing", schedTick))(t); ok {
		t.Fatal("last of an unknown schedule")
	}
}

func must3[A, B any](a A, b B, err error) func(t *testing.T) (A, B) {
	return func(t *testing.T) (A, B) {
		t.Helper()
		check(t, err)
		return a, b
	}
}

// testScheduleRuns: newest tick first, newest row first within a tick,
// limited, one schedule only.
func testScheduleRuns(t *testing.T, s store.Schedules) {
	ctx := ctxT(t)
	first := insertRun(t, s, schedRun("ord", schedTick, "a", store.ScheduleOutcomeWonLock, store.ScheduleSucceeded))
	late := insertRun(t, s, schedRun("ord", schedTick.Add(2*time.Second), "a", store.ScheduleOutcomeWonLock, store.ScheduleSucceeded))
	lost := insertRun(t, s, schedRun("ord", schedTick.Add(time.Second), "a", store.ScheduleOutcomeLostLock, store.ScheduleSkipped))
	won := insertRun(t, s, schedRun("ord", schedTick.Add(time.Second), "b", store.ScheduleOutcomeWonLock, store.ScheduleSucceeded))
	insertRun(t, s, schedRun("ord2", schedTick.Add(time.Hour), "a", store.ScheduleOutcomeWonLock, store.ScheduleSucceeded))
	ids := func(rs []store.ScheduleRun) []int64 {
		out := make([]int64, len(rs))
		for i, r := range rs {
			out[i] = r.ID
		}
		return out
	}
	want := []int64{late, won, lost, first}
	if got := ids(must(s.ScheduleRuns(ctx, "ord", 0))(t)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if got := ids(must(s.ScheduleRuns(ctx, "ord", 2))(t)); fmt.Sprint(got) != fmt.Sprint(want[:2]) {
		t.Fatalf("limit 2: %v, want %v", got, want[:2])
	}
	if got := must(s.ScheduleRuns(ctx, "nothing", 0))(t); len(got) != 0 {
		t.Fatalf("runs of an unknown schedule: %+v", got)
	}
}

// testScheduleLatestRuns: the newest K runs of every schedule, each in
// ScheduleRuns order, in one read.
func testScheduleLatestRuns(t *testing.T, s store.Schedules) {
	ctx := ctxT(t)
	var want = map[string][]int64{}
	for i, name := range []string{"lat-a", "lat-b", "lat-c"} {
		var ids []int64
		for j := range 2 + 2*i {
			at := schedTick.Add(time.Duration(j/2) * time.Second)
			ids = append(ids, insertRun(t, s, schedRun(name, at, "a", store.ScheduleOutcomeWonLock, store.ScheduleSucceeded)))
		}
		want[name] = ids
	}
	got := must(s.LatestScheduleRuns(ctx, 3))(t)
	if len(got) != len(want) {
		t.Fatalf("latest runs of %d schedules, want %d: %+v", len(got), len(want), got)
	}
	for name := range want {
		all := must(s.ScheduleRuns(ctx, name, 3))(t)
		var exp, have []int64
		for _, r := range all {
			exp = append(exp, r.ID)
		}
		for _, r := range got[name] {
			have = append(have, r.ID)
			if r.Schedule != name {
				t.Fatalf("%s: a run of %s", name, r.Schedule)
			}
		}
		if fmt.Sprint(have) != fmt.Sprint(exp) {
			t.Fatalf("%s: latest %v, want %v (ScheduleRuns order, limit 3)", name, have, exp)
		}
	}
	if len(got["lat-a"]) != 2 || len(got["lat-c"]) != 3 {
		t.Fatalf("per-schedule bound: %d and %d runs, want 2 and 3", len(got["lat-a"]), len(got["lat-c"]))
	}
}

// testScheduleSummaries: every schedule defined or with runs, by name,
// with counts per outcome and the latest deciding row.
func testScheduleSummaries(t *testing.T, s store.Schedules) {
	ctx := ctxT(t)
	check(t, s.DefineSchedule(ctx, store.ScheduleDefinition{Name: "life", Spec: "* * * * * *", TimeZone: "UTC", Coordination: "advisoryLock", Overlap: "queue", CatchUp: true, ReplicaID: "b"}))
	check(t, s.DefineSchedule(ctx, store.ScheduleDefinition{Name: "idle", Spec: "@hourly", TimeZone: "Europe/Paris", Coordination: "single", Overlap: "parallel", ReplicaID: "a"}))
	insertRun(t, s, schedRun("life", schedTick, "a", store.ScheduleOutcomeWonLock, store.ScheduleFailed))
	queued := insertRun(t, s, schedRun("life", schedTick.Add(time.Second), "b", store.ScheduleOutcomeQueued, store.ScheduleQueued))
	insertRun(t, s, schedRun("life", schedTick.Add(time.Second), "a", store.ScheduleOutcomeLostLock, store.ScheduleSkipped))
	insertRun(t, s, schedRun("undefined", schedTick, "a", store.ScheduleOutcomeLostLock, store.ScheduleSkipped))
	must(s.ClaimScheduleTick(ctx, store.ScheduleClaim{Schedule: "claims", ScheduledAt: schedTick, ReplicaID: "a"}))(t)

	sums := must(s.ScheduleSummaries(ctx))(t)
	var names []string
	byName := map[string]store.ScheduleSummary{}
	for _, sm := range sums {
		names = append(names, sm.Name)
		byName[sm.Name] = sm
	}
	if fmt.Sprint(names) != "[idle life undefined]" {
		t.Fatalf("summaries %v, want idle, life, undefined by name (claims alone make no schedule)", names)
	}
	life, idle, undef := byName["life"], byName["idle"], byName["undefined"]
	if d := life.Definition; d == nil || d.Overlap != "queue" || !d.CatchUp || d.ReplicaID != "b" || d.UpdatedAt.IsZero() {
		t.Fatalf("life definition: %+v", d)
	}
	if len(life.Counts) != 3 || life.Counts[store.ScheduleOutcomeWonLock] != 1 || life.Counts[store.ScheduleOutcomeQueued] != 1 || life.Counts[store.ScheduleOutcomeLostLock] != 1 {
		t.Fatalf("life counts: %v", life.Counts)
	}
	if life.Last == nil || life.Last.ID != queued || life.Last.Outcome != store.ScheduleOutcomeQueued || life.Last.ReplicaID != "b" {
		t.Fatalf("life last (the latest tick's deciding row, never lostLock): %+v", life.Last)
	}
	if idle.Definition == nil || idle.Definition.TimeZone != "Europe/Paris" || idle.Last != nil || len(idle.Counts) != 0 {
		t.Fatalf("idle: %+v", idle)
	}
	if undef.Definition != nil || undef.Last != nil || undef.Counts[store.ScheduleOutcomeLostLock] != 1 {
		t.Fatalf("a schedule with only a lostLock row: %+v", undef)
	}
}

// testScheduleCollect: old claims go, stale live runs are abandoned,
// finished runs older than the cut-off go; zero cut-offs remove nothing.
func testScheduleCollect(t *testing.T, d store.Driver, s store.Schedules, clock *Clock) {
	ctx := ctxT(t)
	claim := func(at time.Time) bool {
		t.Helper()
		return must(s.ClaimScheduleTick(ctx, store.ScheduleClaim{Schedule: "gc", ScheduledAt: at, ReplicaID: "a"}))(t)
	}
	claim(schedTick)
	claim(schedTick.Add(time.Second))
	oldDone := insertRun(t, s, schedRun("gc", schedTick, "a", store.ScheduleOutcomeWonLock, store.ScheduleSucceeded))
	oldSkip := insertRun(t, s, schedRun("gc", schedTick, "b", store.ScheduleOutcomeLostLock, store.ScheduleSkipped))
	staleRun := insertRun(t, s, schedRun("gc", schedTick.Add(time.Second), "a", store.ScheduleOutcomeWonLock, store.ScheduleRunning))
	staleQueued := insertRun(t, s, schedRun("gc", schedTick.Add(2*time.Second), "a", store.ScheduleOutcomeQueued, store.ScheduleQueued))
	beating := insertRun(t, s, schedRun("gc", schedTick.Add(2*time.Second), "b", store.ScheduleOutcomeWonLock, store.ScheduleRunning))
	cut := schedCut(t, d, clock)
	claim(schedTick.Add(2 * time.Second))
	check(t, s.HeartbeatScheduleRuns(ctx, "b"))
	young := insertRun(t, s, schedRun("gc", schedTick.Add(3*time.Second), "c", store.ScheduleOutcomeWonLock, store.ScheduleSucceeded))

	if res := must(s.CollectSchedules(ctx, store.ScheduleGC{}))(t); res != (store.ScheduleGCResult{}) {
		t.Fatalf("zero cut-offs collected %+v", res)
	}
	if res := must(s.CollectSchedules(ctx, store.ScheduleGC{ClaimsBefore: cut}))(t); res != (store.ScheduleGCResult{Claims: 2}) {
		t.Fatalf("claims before the cut-off: %+v", res)
	}
	if n := must(s.CountScheduleClaims(ctx, "gc"))(t); n != 1 {
		t.Fatalf("claims left: %d, want the young one", n)
	}
	if !claim(schedTick) || claim(schedTick.Add(2*time.Second)) {
		t.Fatal("a collected claim is free again, a kept one is not")
	}

	abandonedFrom := schedCut(t, d, clock)
	res := must(s.CollectSchedules(ctx, store.ScheduleGC{StaleBefore: cut, RunsBefore: cut}))(t)
	abandonedTo := schedCut(t, d, clock)
	if res != (store.ScheduleGCResult{Abandoned: 2, Runs: 2}) {
		t.Fatalf("stale and old runs: %+v, want 2 abandoned and 2 deleted", res)
	}
	rows := map[int64]store.ScheduleRun{}
	for _, r := range must(s.ScheduleRuns(ctx, "gc", 0))(t) {
		rows[r.ID] = r
	}
	if _, ok := rows[oldDone]; ok {
		t.Fatal("a finished run older than the cut-off was kept")
	}
	if _, ok := rows[oldSkip]; ok {
		t.Fatal("a skipped row older than the cut-off was kept")
	}
	for _, id := range []int64{staleRun, staleQueued} {
		r, ok := rows[id]
		if !ok || r.Status != store.ScheduleAbandoned || r.Error != store.ScheduleAbandonedError {
			t.Fatalf("stale live run %d: %+v (kept %v)", id, r, ok)
		}
		between(t, "finished of an abandoned run", r.Finished, abandonedFrom, abandonedTo)
	}
	if r := rows[beating]; r.Status != store.ScheduleRunning {
		t.Fatalf("a run whose replica beats after the cut-off: %+v", r)
	}
	if r, ok := rows[young]; !ok || r.Status != store.ScheduleSucceeded {
		t.Fatalf("a run finished after the cut-off: %+v (kept %v)", r, ok)
	}
	if res := must(s.CollectSchedules(ctx, store.ScheduleGC{StaleBefore: cut, RunsBefore: cut, ClaimsBefore: cut}))(t); res != (store.ScheduleGCResult{}) {
		t.Fatalf("a second pass with the same cut-offs: %+v", res)
	}
	later := schedCut(t, d, clock)
	if res := must(s.CollectSchedules(ctx, store.ScheduleGC{RunsBefore: later}))(t); res != (store.ScheduleGCResult{Runs: 3}) {
		t.Fatalf("runs finished before a later cut-off (the abandoned ones and the young one): %+v", res)
	}
	if rs := must(s.ScheduleRuns(ctx, "gc", 0))(t); len(rs) != 1 || rs[0].ID != beating {
		t.Fatalf("left: %+v, want only the live run", rs)
	}
}
