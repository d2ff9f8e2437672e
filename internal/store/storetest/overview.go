package storetest

// Overviews (store.Overview): the schedule activity and workflow run
// counts `voltro cluster status` shows. Activity is judged "as of" instants
// read from the store's clock (schedCut), never by sleeping out a window.

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// runOverview runs the overview cases.
func runOverview(t *testing.T, factory Factory) {
	get := func(t *testing.T) (store.Driver, store.Overview, *Clock) {
		d, clock := open(t, factory)
		return d, d, clock
	}
	t.Run("Empty", func(t *testing.T) { d, o, _ := get(t); testOverviewEmpty(t, d, o) })
	t.Run("Schedules", func(t *testing.T) { d, o, c := get(t); testOverviewSchedules(t, d, o, c) })
	t.Run("Executions", func(t *testing.T) { d, o, _ := get(t); testOverviewExecutions(t, d, o) })
}

func testOverviewEmpty(t *testing.T, d store.Driver, o store.Overview) {
	ctx := ctxT(t)
	now := must(d.Now(ctx))(t)
	ov := must(o.ScheduleOverview(ctx, now.Add(-5*time.Minute)))(t)
	if ov == nil || ov.Active == nil || ov.Running == nil || ov.Latest == nil ||
		len(ov.Active)+len(ov.Running)+len(ov.Latest)+ov.RecentClaims != 0 {
		t.Fatalf("overview of an empty store: %+v", ov)
	}
	got := must(o.CountExecutions(ctx, store.ExecRunning, store.ExecSuspended))(t)
	if want := map[store.ExecStatus]int{store.ExecRunning: 0, store.ExecSuspended: 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("counts of an empty store: %v, want %v", got, want)
	}
}

func testOverviewSchedules(t *testing.T, d store.Driver, o store.Overview, clock *Clock) {
	ctx := ctxT(t)
	s := d
	before := schedCut(t, d, clock)
	for _, c := range []store.ScheduleClaim{
		{Schedule: "ov.a", ScheduledAt: schedTick, ReplicaID: "r1"},
		{Schedule: "ov.b", ScheduledAt: schedTick, ReplicaID: "r1"},
		{Schedule: "ov.a", ScheduledAt: schedTick.Add(time.Minute), ReplicaID: "r2"}, // ov.a's latest
	} {
		if ok := must(s.ClaimScheduleTick(ctx, c))(t); !ok {
			t.Fatalf("claim %s not won", c.Key())
		}
		clock.Advance(3 * time.Millisecond) // a later claim has a later millisecond
	}
	insertRun(t, s, schedRun("ov.a", schedTick, "r1", store.ScheduleOutcomeWonLock, store.ScheduleRunning))
	insertRun(t, s, schedRun("ov.a", schedTick.Add(time.Minute), "r2", store.ScheduleOutcomeWonLock, store.ScheduleSucceeded))
	insertRun(t, s, schedRun("ov.a", schedTick.Add(time.Minute), "r3", store.ScheduleOutcomeLostLock, store.ScheduleSkipped))
	insertRun(t, s, schedRun("ov.b", schedTick, "r1", store.ScheduleOutcomeWonLock, store.ScheduleRunning))
	after := schedCut(t, d, clock)

	ov := must(o.ScheduleOverview(ctx, before))(t)
	wantActive := []store.ReplicaRuns{{ReplicaID: "r1", Runs: 2}, {ReplicaID: "r2", Runs: 1}, {ReplicaID: "r3", Runs: 1}}
	wantRunning := []store.ReplicaRuns{{ReplicaID: "r1", Runs: 2}}
	if ov == nil || !reflect.DeepEqual(ov.Active, wantActive) || !reflect.DeepEqual(ov.Running, wantRunning) || ov.RecentClaims != 3 {
		t.Fatalf("as of before the rows: %+v, want active %v, running %v, 3 recent claims", ov, wantActive, wantRunning)
	}
	checkLatest(t, ov.Latest, before, after)

	ov = must(o.ScheduleOverview(ctx, after))(t)
	if ov == nil || len(ov.Active) != 0 || ov.Active == nil || !reflect.DeepEqual(ov.Running, wantRunning) || ov.RecentClaims != 0 {
		t.Fatalf("as of after the rows: %+v, want no active runs and no recent claims, running %v", ov, wantRunning)
	}
	checkLatest(t, ov.Latest, before, after)
}

// checkLatest: one claim per schedule, the newest, made between from and to.
func checkLatest(t *testing.T, got []store.LatestClaim, from, to time.Time) {
	t.Helper()
	if len(got) != 2 || got[0].Schedule != "ov.a" || got[0].ReplicaID != "r2" || got[1].Schedule != "ov.b" || got[1].ReplicaID != "r1" {
		t.Fatalf("latest claims %+v, want ov.a by r2 and ov.b by r1", got)
	}
	for _, c := range got {
		if c.ClaimedAt.Before(from) || c.ClaimedAt.After(to) {
			t.Errorf("claim of %s at %s, not between %s and %s", c.Schedule, c.ClaimedAt, from, to)
		}
	}
}

func testOverviewExecutions(t *testing.T, d store.Driver, o store.Overview) {
	ctx := ctxT(t)
	w := store.Workflows(d)
	for i := 0; i < 4; i++ {
		id := fmt.Sprint("ov", i)
		_, _, _, err := w.StartExecution(ctx, newExec(id), store.StartContext{}, startMsg(id), nil)
		check(t, err)
	}
	_, epoch := own(t, d, "me:1", "default/1")
	f := store.Fence{Owner: "me:1", Epoch: epoch}
	check(t, store.UpdateExecution(ctx, w, store.ExecutionUpdate{ID: "ov0", Shard: "default/1", Fence: f, Status: store.ExecSuspended, WaitingOn: "sleep 1"}))
	check(t, store.UpdateExecution(ctx, w, store.ExecutionUpdate{ID: "ov1", Shard: "default/1", Fence: f, Status: store.ExecCompleted, Output: []byte(`1`)}))
	got := must(o.CountExecutions(ctx, store.ExecRunning, store.ExecSuspended, store.ExecCompleted, store.ExecFailed))(t)
	want := map[store.ExecStatus]int{store.ExecRunning: 2, store.ExecSuspended: 1, store.ExecCompleted: 1, store.ExecFailed: 0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	got = must(o.CountExecutions(ctx, store.ExecCompleted))(t)
	if want := map[store.ExecStatus]int{store.ExecCompleted: 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("completed only: %v, want %v", got, want)
	}
}
