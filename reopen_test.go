package voltro_test

// RetryWorkflow and ResumeWorkflow: a failed run retried from its last good
// step (the steps before it do not run again), a cancelled run resumed,
// and clear refusals for runs in other states.

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro"
)

func TestRetryAndResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var reserved, charges atomic.Int32
	var broken atomic.Bool
	broken.Store(true)
	errDeclined := errors.New("card declined")
	flow := voltro.NewWorkflow("reopen.order", func(wc *voltro.WorkflowContext, n int) (string, error) {
		if _, err := voltro.Step(wc, "reserve", func(context.Context) (int, error) { return int(reserved.Add(1)), nil }); err != nil {
			return "", err
		}
		if n == 2 {
			if _, err := voltro.AwaitSignal[bool](wc, "go", 0); err != nil {
				return "", err
			}
		}
		if _, err := voltro.Step(wc, "charge", func(context.Context) (int, error) {
			charges.Add(1)
			if broken.Load() {
				return 0, errDeclined
			}
			return n, nil
		}, voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 1})); err != nil {
			return "", err
		}
		return "done", nil
	})
	app := txApp(t, "sqlite:"+filepath.Join(t.TempDir(), "reopen.db"), "50ms", flow)

	failed, err := flow.Start(ctx, app, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failed.Result(ctx); err == nil {
		t.Fatalf("the first run must fail: %v", err)
	}
	if err := app.ResumeWorkflow(ctx, failed.ID); err != nil {
		t.Fatal(err)
	}
	// Resumed with its whole journal, the failed charge replays its error.
	if _, err := failed.Result(ctx); err == nil || charges.Load() != 1 {
		t.Fatalf("a resumed run replays its journaled failure: %v, %d charges", err, charges.Load())
	}
	broken.Store(false)
	if err := app.RetryWorkflow(ctx, failed.ID); err != nil {
		t.Fatal(err)
	}
	if out, err := failed.Result(ctx); err != nil || out != "done" {
		t.Fatalf("the retried run: %q, %v", out, err)
	}
	if reserved.Load() != 1 || charges.Load() != 2 {
		t.Fatalf("a retry runs again only from the failed step: reserve ran %d times, charge %d", reserved.Load(), charges.Load())
	}
	if err := app.RetryWorkflow(ctx, failed.ID); !errors.Is(err, voltro.ErrInvalidArgument) || !strings.Contains(err.Error(), "completed") {
		t.Fatalf("retry of a completed run: %v", err)
	}

	waiting, err := flow.Start(ctx, app, 2)
	if err != nil {
		t.Fatal(err)
	}
	waitSuspended(t, app, waiting.ID)
	if err := app.ResumeWorkflow(ctx, waiting.ID); !errors.Is(err, voltro.ErrInvalidArgument) || !strings.Contains(err.Error(), "suspended") {
		t.Fatalf("resume of a suspended run: %v", err)
	}
	if err := app.CancelWorkflow(ctx, waiting.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := waiting.Result(ctx); !errors.Is(err, voltro.ErrCancelled) {
		t.Fatalf("the cancelled run: %v", err)
	}
	if err := app.ResumeWorkflow(ctx, waiting.ID); err != nil {
		t.Fatal(err)
	}
	waitSuspended(t, app, waiting.ID) // back on its signal, the reservation kept
	if _, err := app.SignalWorkflow(ctx, waiting.ID, "go", true); err != nil {
		t.Fatal(err)
	}
	if out, err := waiting.Result(ctx); err != nil || out != "done" || reserved.Load() != 2 {
		t.Fatalf("the resumed run: %q, %v, reserve ran %d times in all", out, err, reserved.Load())
	}
	if err := app.ResumeWorkflow(ctx, "wf_nope"); !errors.Is(err, voltro.ErrNotFound) {
		t.Fatalf("resume of an unknown run: %v", err)
	}
}
