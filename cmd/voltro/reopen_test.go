package main

// voltro workflows retry and resume: a failed run retried from the CLI
// completes; a completed run is refused with exit 1 and a reason.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro"
)

func TestWorkflowsRetryAndResume(t *testing.T) {
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "retry.db")
	env := map[string]string{"DB_URL": url, "POD_NAME": "wf-retry", "VOLTRO_INSPECT_ADDR": "127.0.0.1:0", "VOLTRO_POLL_INTERVAL": "50ms"}
	getenv := func(k string) string { return env[k] }
	var broken atomic.Bool
	broken.Store(true)
	flaky := voltro.NewWorkflow("cli.flaky", func(wc *voltro.WorkflowContext, in int) (int, error) {
		return voltro.Step(wc, "try", func(context.Context) (int, error) {
			if broken.Load() {
				return 0, errors.New("not yet")
			}
			return in, nil
		}, voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 1}))
	})
	app, err := voltro.New(ctx, voltro.WithEnv(getenv), voltro.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(flaky); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer app.Close(context.Background())
	h, err := flaky.Start(ctx, app, 7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Result(ctx); err == nil {
		t.Fatal("the first run must fail")
	}
	broken.Store(false)
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"workflows", "retry", h.ID}, getenv, &out, &errb); code != 0 || !strings.Contains(out.String(), "retried") {
		t.Fatalf("retry: exit %d: %s%s", code, out.String(), errb.String())
	}
	if got, err := h.Result(ctx); err != nil || got != 7 {
		t.Fatalf("the retried run: %d, %v", got, err)
	}
	out.Reset()
	errb.Reset()
	if code := run(ctx, []string{"workflows", "resume", h.ID}, getenv, &out, &errb); code != 1 || !strings.Contains(errb.String(), "completed: there is nothing to resume") {
		t.Fatalf("resume of a completed run: exit %d: %s%s", code, out.String(), errb.String())
	}
}
