package voltro_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
)

func memoryApp(t *testing.T, env map[string]string) *voltro.App {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	env["DB_URL"] = "memory:"
	app, err := voltro.New(context.Background(), voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	return app
}

// A payload the handler cannot decode is dead-lettered with the decode
// error (visible and replayable), and the entity keeps draining.
func TestUndecodablePayloadIsDeadLettered(t *testing.T) {
	app := memoryApp(t, nil)
	type order struct {
		Qty int `json:"qty"`
	}
	handler := voltro.NewEntity("orders", func(ctx context.Context, id string, o order) (int, error) { return o.Qty * 2, nil })
	if err := app.Register(handler); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// an old sender still sends the previous message shape
	legacy := voltro.NewEntity("orders", func(context.Context, string, string) (int, error) { return 0, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := legacy.Request(ctx, app, "o1", "three")
	if !errors.Is(err, voltro.ErrDeadLettered) || !strings.Contains(err.Error(), "decode") {
		t.Fatalf("an undecodable payload must come back dead-lettered with the decode error: %v", err)
	}
	got, err := handler.Request(ctx, app, "o1", order{Qty: 21})
	if err != nil || got != 42 {
		t.Fatalf("the entity must keep draining: %d %v", got, err)
	}
}

func TestBadScheduleInput(t *testing.T) {
	app := memoryApp(t, nil)
	noop := func(context.Context, time.Time) error { return nil }
	for spec, want := range map[string]string{
		"61 * * * *":  "61 * * * *",
		"* * *":       "* * *",
		"@every 1.5s": "@every 1.5s",
		"0 0 30 2 *":  "0 0 30 2 *",
	} {
		err := app.Register(voltro.NewSchedule("bad", spec, noop))
		if !errors.Is(err, voltro.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Fatalf("spec %q: want invalid_argument naming it, got %v", spec, err)
		}
	}
	err := app.Register(voltro.NewSchedule("bad", "@every 1s", noop, voltro.Coordination("leader")))
	if !errors.Is(err, voltro.ErrInvalidConfig) || !strings.Contains(err.Error(), "leader") {
		t.Fatalf("unknown coordination: %v", err)
	}
	err = app.Register(voltro.NewSchedule("bad", "@every 1s", noop, voltro.Overlap("drop")))
	if !errors.Is(err, voltro.ErrInvalidConfig) || !strings.Contains(err.Error(), "drop") {
		t.Fatalf("unknown overlap: %v", err)
	}
	_, err = voltro.New(context.Background(), voltro.WithEnv(func(k string) string {
		return map[string]string{"DB_URL": "memory:", "VOLTRO_SCHEDULE_COORDINATION": "raft"}[k]
	}))
	if !errors.Is(err, voltro.ErrInvalidConfig) || !strings.Contains(err.Error(), "raft") {
		t.Fatalf("an unknown app-wide coordination must fail boot: %v", err)
	}
}

func TestBadEnvironmentFailsBoot(t *testing.T) {
	_, err := voltro.New(context.Background(), voltro.WithEnv(func(k string) string {
		return map[string]string{"DB_URL": "memory:", "VOLTRO_WORKFLOW_SHARD_LOCK": "zookeeper"}[k]
	}))
	if !errors.Is(err, voltro.ErrInvalidConfig) || !strings.Contains(err.Error(), "zookeeper") || !strings.Contains(err.Error(), "advisory") {
		t.Fatalf("%v", err)
	}
}
