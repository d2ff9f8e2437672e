package voltro

// The deprecated names answer as the names they stand for, and the typed
// schedule counts have a field for every outcome the scheduler records.

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"github.com/voltro/voltro/internal/schedule"
)

func TestDeprecatedNamesAnswerAsTheNewOnes(t *testing.T) {
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	ctx := context.Background()
	app, err := New(ctx, WithDB("memory:"), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		WithEnv(func(k string) string { return map[string]string{"VOLTRO_INSPECT_ADDR": "127.0.0.1:0"}[k] }))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	wait := NewWorkflow("dep.wait", func(wc *WorkflowContext, _ struct{}) (string, error) {
		return AwaitSignal[string](wc, "go", 0)
	})
	if err := app.Register(wait); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := app.StartWorkflow(ctx, "dep.wait", struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	old, err := app.WorkflowStatusOf(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	now, err := app.Get(ctx, id)
	if err != nil || now.ID != old.ID || now.Name != old.Name {
		t.Fatalf("Get %+v (%v), WorkflowStatusOf %+v", now, err, old)
	}
	if ok, err := app.SignalWorkflow(ctx, id, "go", "on"); err != nil || !ok {
		t.Fatalf("SignalWorkflow: %v, %v", ok, err)
	}
	if out, err := app.Await(ctx, id); err != nil || string(out) != `"on"` {
		t.Fatalf("Await: %s, %v", out, err)
	}
	ready, why := app.Ready(ctx)
	if h := app.Health(ctx); ready != h.Ready || len(why) != len(h.Problems) {
		t.Fatalf("Ready %v %v, Health %+v", ready, why, h)
	}
}

func TestScheduleStatsHasEveryOutcome(t *testing.T) {
	if n, want := reflect.TypeFor[ScheduleStats]().NumField(), len(schedule.Outcomes); n != want {
		t.Fatalf("ScheduleStats has %d fields for the scheduler's %d outcomes", n, want)
	}
}
