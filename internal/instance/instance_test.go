package instance

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/schedule"
	"github.com/voltro/voltro/internal/service"
	"github.com/voltro/voltro/internal/store/memory"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func newMemory(t *testing.T) *Instance {
	t.Helper()
	var built *Instance
	in, err := New(context.Background(), Setup{
		Env:    env(map[string]string{"DB_URL": "memory:", "POD_NAME": "inst", "VOLTRO_INSPECT_ADDR": "127.0.0.1:0", "VOLTRO_REGISTRY_DIR": t.TempDir()}),
		Logger: quiet(), Store: memory.New(), Built: func(in *Instance) { built = in },
	})
	if err != nil {
		t.Fatal(err)
	}
	if built != in {
		t.Fatal("Built was not handed the instance New returned")
	}
	return in
}

// Every part is built by New, in the order it starts: the workflow runtime
// before the engine it stops after, the scheduler last, so it stops first.
func TestPartsInOrder(t *testing.T) {
	in := newMemory(t)
	defer in.Stop(context.Background())
	if in.Workflows == nil || in.Scheduler == nil || in.Feed == nil {
		t.Fatalf("parts left to be attached later: workflows %v, scheduler %v, feed %v", in.Workflows, in.Scheduler, in.Feed)
	}
	var names []string
	for _, p := range in.parts {
		names = append(names, fmt.Sprintf("%T", p))
	}
	if len(in.parts) < 3 || in.parts[1] != service.Service(in.Engine) || in.parts[len(in.parts)-1] != service.Service(in.Scheduler) {
		t.Fatalf("parts %v: want the workflow runtime, the engine, …, the scheduler", names)
	}
}

// A schedule registered while the instance stops neither races with the
// stop (the App used to append the scheduler's stop to a list that Close
// read unlocked) nor outlives it.
func TestRegisterWhileStopping(t *testing.T) {
	for range 5 {
		in := newMemory(t)
		ctx := context.Background()
		if err := in.Start(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				_ = in.Scheduler.Register(schedule.Schedule{Name: fmt.Sprintf("s%d", i), Spec: "@every 1h",
					Func: func(context.Context, time.Time) error { return nil }})
			}
		}()
		if err := in.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if err := in.Stop(ctx); err != nil {
			t.Fatalf("a second Stop: %v", err)
		}
	}
}

// A start that fails stops what had started and returns the error; the
// instance can still be stopped.
func TestStartFailureStopsEverything(t *testing.T) {
	busy := newMemory(t)
	ctx := context.Background()
	if err := busy.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer busy.Stop(ctx)
	in, err := New(ctx, Setup{
		Env:    env(map[string]string{"DB_URL": "memory:", "POD_NAME": "inst2", "VOLTRO_INSPECT_ADDR": busy.Engine.InspectAddr(), "VOLTRO_REGISTRY_DIR": t.TempDir()}),
		Logger: quiet(), Store: memory.New(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Start(ctx); err == nil {
		t.Fatal("a start on a taken inspect address succeeded")
	}
	if err := in.Stop(ctx); err != nil {
		t.Fatalf("Stop after a failed Start: %v", err)
	}
}
