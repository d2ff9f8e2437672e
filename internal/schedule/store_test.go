// The Store contract, run against every backend.
package schedule

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestStoreContract(t *testing.T) {
	t.Parallel()
	for _, sc := range storeCases(t, "store", true) {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := sc.open(t)
			var wg sync.WaitGroup
			for range 4 { // concurrent boots create the tables once
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := sc.open(t).Init(ctx); err != nil {
						t.Errorf("Init: %v", err)
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			testClaims(t, st)
			testRunLifecycle(t, st)
			testSummaries(t, st)
			testGC(t, st)
		})
	}
}

func testClaims(t *testing.T, st Store) {
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 10, 0, 7, 0, time.UTC)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, err := st.Claim(ctx, Claim{Schedule: "claims", ScheduledAt: at, ReplicaID: string(rune('a' + i))})
			if err != nil {
				t.Errorf("Claim: %v", err)
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
	won, err := st.Claim(ctx, Claim{Schedule: "claims", ScheduledAt: at.Add(time.Second), ReplicaID: "a"})
	if err != nil || !won {
		t.Fatalf("next tick's claim: %v %v", won, err)
	}
	if k := ClaimKey("claims", at); k != "claims@1777629607" {
		t.Fatalf("claim key %q", k)
	}
}

func testRunLifecycle(t *testing.T, st Store) {
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	active := func(stale time.Duration) Activity {
		t.Helper()
		a, err := st.Active(ctx, "life", stale)
		must(err)
		return a
	}
	running, err := st.Insert(ctx, Run{Schedule: "life", ScheduledAt: at, ReplicaID: "a", Outcome: OutcomeWonLock, Status: StatusRunning})
	must(err)
	queued, err := st.Insert(ctx, Run{Schedule: "life", ScheduledAt: at.Add(time.Second), ReplicaID: "b", Outcome: OutcomeQueued, Status: StatusQueued})
	must(err)
	_, err = st.Insert(ctx, Run{Schedule: "life", ScheduledAt: at.Add(time.Second), ReplicaID: "a", Outcome: OutcomeLostLock, Status: StatusSkipped})
	must(err)
	if a := active(time.Minute); a != (Activity{Running: 1, Queued: 1}) {
		t.Fatalf("active: %+v", a)
	}
	time.Sleep(300 * time.Millisecond)
	if a := active(200 * time.Millisecond); a != (Activity{}) {
		t.Fatalf("stale rows still count: %+v", a)
	}
	must(st.Heartbeat(ctx, "a"))
	if a := active(200 * time.Millisecond); a != (Activity{Running: 1}) {
		t.Fatalf("after a's heartbeat: %+v", a)
	}
	must(st.Finish(ctx, running, StatusFailed, "boom"))
	ok, err := st.Start(ctx, queued)
	must(err)
	if !ok {
		t.Fatal("queued run did not start")
	}
	if ok, _ := st.Start(ctx, queued); ok {
		t.Fatal("a running run started twice")
	}
	if a := active(time.Minute); a != (Activity{Running: 1}) {
		t.Fatalf("after start: %+v", a)
	}
	runs, err := st.Runs(ctx, "life", 0)
	must(err)
	if len(runs) != 3 {
		t.Fatalf("runs: %+v", runs)
	}
	// newest tick first, newest row first within a tick
	if runs[0].Outcome != OutcomeLostLock || runs[1].ID != queued || runs[2].ID != running {
		t.Fatalf("order: %+v", runs)
	}
	r := runs[2]
	if r.Status != StatusFailed || r.Error != "boom" || !r.ScheduledAt.Equal(at) || r.ReplicaID != "a" || r.Started.IsZero() || r.Finished.IsZero() {
		t.Fatalf("failed run: %+v", r)
	}
	if r.Finished.Sub(r.Started) < 250*time.Millisecond || time.Since(r.Started) > time.Minute || time.Since(r.Started) < 0 {
		t.Fatalf("run times (store clock) look wrong: %+v", r)
	}
	if runs[0].Started.IsZero() || runs[0].Finished.IsZero() || runs[0].Status != StatusSkipped {
		t.Fatalf("skipped row: %+v", runs[0])
	}
	if runs[1].Status != StatusRunning || !runs[1].Finished.IsZero() {
		t.Fatalf("started row: %+v", runs[1])
	}
	if got, _ := st.Runs(ctx, "life", 1); len(got) != 1 {
		t.Fatalf("limit: %d rows", len(got))
	}
	last, ok, err := st.LastScheduledAt(ctx, "life", at.Add(time.Hour))
	must(err)
	if !ok || !last.Equal(at.Add(time.Second)) {
		t.Fatalf("last: %v %v", last, ok)
	}
	last, ok, err = st.LastScheduledAt(ctx, "life", at.Add(500*time.Millisecond))
	must(err)
	if !ok || !last.Equal(at) {
		t.Fatalf("last not after: %v %v", last, ok)
	}
	if _, ok, _ := st.LastScheduledAt(ctx, "nothing", at); ok {
		t.Fatal("last of an unknown schedule")
	}
}

func testSummaries(t *testing.T, st Store) {
	ctx := context.Background()
	d := Definition{Name: "life", Spec: "* * * * * *", TimeZone: "UTC", Coordination: AdvisoryLock, Overlap: OverlapSkip, ReplicaID: "a"}
	if err := st.Define(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Overlap, d.CatchUp, d.ReplicaID = OverlapQueue, true, "b"
	if err := st.Define(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := st.Define(ctx, Definition{Name: "idle", Spec: "@hourly", TimeZone: "Europe/Paris", Coordination: Single, Overlap: OverlapParallel, ReplicaID: "a"}); err != nil {
		t.Fatal(err)
	}
	sums, err := st.Summaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Summary{}
	for _, s := range sums {
		byName[s.Name] = s
	}
	life, idle, claims := byName["life"], byName["idle"], byName["claims"]
	if life.Definition == nil || life.Definition.Overlap != OverlapQueue || !life.Definition.CatchUp || life.Definition.ReplicaID != "b" || life.Definition.UpdatedAt.IsZero() {
		t.Fatalf("life definition: %+v", life.Definition)
	}
	if life.Counts[OutcomeWonLock] != 1 || life.Counts[OutcomeQueued] != 1 || life.Counts[OutcomeLostLock] != 1 {
		t.Fatalf("life counts: %v", life.Counts)
	}
	if life.Last == nil || life.Last.Outcome != OutcomeQueued {
		t.Fatalf("life last (must not be the lostLock row): %+v", life.Last)
	}
	if idle.Definition == nil || idle.Definition.TimeZone != "Europe/Paris" || idle.Last != nil || len(idle.Counts) != 0 {
		t.Fatalf("idle: %+v", idle)
	}
	if claims.Name != "" {
		t.Fatalf("claims alone make no schedule: %+v", claims)
	}
}

func testGC(t *testing.T, st Store) {
	ctx := context.Background()
	time.Sleep(100 * time.Millisecond)
	res, err := st.GC(ctx, Retention{Claims: time.Hour, Runs: time.Hour, Stale: time.Hour})
	if err != nil || res != (GCResult{}) {
		t.Fatalf("gc with long retention: %+v %v", res, err)
	}
	res, err = st.GC(ctx, Retention{Claims: 10 * time.Millisecond, Runs: time.Hour, Stale: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Claims != 2 || res.Abandoned != 1 || res.Runs != 0 {
		t.Fatalf("gc: %+v", res)
	}
	runs, _ := st.Runs(ctx, "life", 0)
	if runs[1].Status != StatusAbandoned || runs[1].Error == "" || runs[1].Finished.IsZero() {
		t.Fatalf("abandoned run: %+v", runs[1])
	}
	won, err := st.Claim(ctx, Claim{Schedule: "claims", ScheduledAt: time.Date(2026, 5, 1, 10, 0, 7, 0, time.UTC), ReplicaID: "z"})
	if err != nil || !won {
		t.Fatalf("a collected claim is free again: %v %v", won, err)
	}
	time.Sleep(50 * time.Millisecond)
	res, err = st.GC(ctx, Retention{Claims: time.Hour, Runs: 10 * time.Millisecond, Stale: time.Hour})
	if err != nil || res.Runs != 3 {
		t.Fatalf("gc runs: %+v %v", res, err)
	}
}
