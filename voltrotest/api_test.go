package voltrotest_test

// The parts of the public API no other test reached: send options, start
// options, schedule options and counts, the shard ledger, the metrics
// registry and Env.History.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/voltrotest"
)

// Delay and DeliverAt defer a message on the virtual clock; Tag, Headers
// and ShardGroup go with it.
func TestSendOptionsOnVirtualTime(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	inbox := voltro.NewEntity("api.inbox", func(_ context.Context, id string, msg string) (struct{}, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, msg)
		return struct{}{}, nil
	}, voltro.ShardGroup("default"))
	env := voltrotest.New(t, inbox)
	ctx := context.Background()
	if err := inbox.Send(ctx, env.App(), "a", "in an hour", voltro.Delay(time.Hour), voltro.Tag("later"),
		voltro.Headers(map[string]string{"x-test": "1"})); err != nil {
		t.Fatal(err)
	}
	if err := inbox.Send(ctx, env.App(), "a", "in two hours", voltro.DeliverAt(env.Now().Add(2*time.Hour))); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	env.Advance(30 * time.Minute)
	if n := count(); n != 0 {
		t.Fatalf("%d delivered after 30m, want none yet", n)
	}
	env.Advance(time.Hour)
	if n := count(); n != 1 {
		t.Fatalf("%d delivered after 1h30, want the delayed one", n)
	}
	env.Advance(time.Hour)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "in an hour" || got[1] != "in two hours" {
		t.Fatalf("delivered %q, want both in their order", got)
	}
}

// WithSubject and WithTrace reach the run's StartInfo; WorkflowName is
// the registered name; Env.History reads the finished run.
func TestStartOptionsReachTheRun(t *testing.T) {
	t.Parallel()
	type seen struct {
		Name, Subject, Trace string
	}
	who := voltro.NewWorkflow("api.who", func(wc *voltro.WorkflowContext, _ struct{}) (seen, error) {
		info, err := wc.StartInfo()
		return seen{Name: wc.WorkflowName(), Subject: info.Subject, Trace: info.Trace}, err
	})
	env := voltrotest.New(t, who)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	h, err := who.Start(context.Background(), env.App(), struct{}{}, voltro.WithSubject("alice"), voltro.WithTrace(tp))
	if err != nil {
		t.Fatal(err)
	}
	env.WaitFor(h.ID, voltrotest.Finished())
	out, err := h.Result(context.Background())
	if err != nil || out != (seen{Name: "api.who", Subject: "alice", Trace: tp}) {
		t.Fatalf("the run saw %+v (%v)", out, err)
	}
	if hist := env.History(h.ID); hist.Workflow != "api.who" || hist.Status != voltro.StatusCompleted {
		t.Fatalf("history %+v, want the completed api.who run", hist)
	}
}

// ScheduleStats counts each schedule's ticks by outcome; InTimeZone and
// CatchUp are accepted with the rest.
func TestScheduleStatsCount(t *testing.T) {
	t.Parallel()
	tick := func(context.Context, time.Time) error { return nil }
	hourly := voltro.NewSchedule("api.hourly", "0 * * * *", tick, voltro.InTimeZone("Europe/Paris"), voltro.CatchUp())
	env := voltrotest.New(t, hourly)
	env.Advance(3 * time.Hour)
	st, ok := env.App().ScheduleStats()["api.hourly"]
	if !ok || st.Single != 3 || st.Missed != 0 || st.WonLock != 0 {
		t.Fatalf("stats %+v (listed %v), want 3 single firings", st, ok)
	}
}

// ShardOwners maps every shard this lone instance holds to it, and the
// metrics registry serves the instance's collectors.
func TestShardOwnersAndMetrics(t *testing.T) {
	t.Parallel()
	inbox := voltro.NewEntity("api.ledger", func(context.Context, string, string) (struct{}, error) { return struct{}{}, nil })
	env := voltrotest.New(t, inbox)
	owners, perGroup, err := env.App().ShardOwners(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	owned, total := env.App().Shards()
	if perGroup <= 0 || len(owners) != owned || owned != total {
		t.Fatalf("%d owners, %d shards per group, holding %d of %d", len(owners), perGroup, owned, total)
	}
	families, err := env.App().MetricsRegistry().Gather()
	if err != nil || len(families) == 0 {
		t.Fatalf("the metrics registry gathered %d families (%v)", len(families), err)
	}
}
