package workflow_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/workflow/wftest"
)

// The conformance suite on the memory store, under -race in scripts/test:
// it exercises the replay engine's concurrency (mailboxes, waiters, timers).
func TestWorkflowEngineMemory(t *testing.T) {
	wftest.Run(t, func(t *testing.T, register func(*voltro.App)) *voltro.App {
		env := map[string]string{"DB_URL": "memory:", "POD_NAME": "race"}
		app, err := voltro.New(context.Background(), voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			t.Fatal(err)
		}
		register(app)
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.Close(context.Background()) })
		return app
	})
}
