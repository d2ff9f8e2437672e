package voltro_test

// A patch placed where runs of the old code wait: a run suspended there
// (on a signal, on a child) has no journal entry at that point until its
// wait ends, yet it got there under the old code, so the new code must
// keep it on the old branch.

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testwait"
)

// screenChild is the child of waitFlow's "child" kind: it waits for "go".
var screenChild = voltro.NewWorkflow("ver.screen-child", func(wc *voltro.WorkflowContext, _ int) (string, error) {
	return voltro.AwaitSignal[string](wc, "go", 0)
})

// waitFlow is one deploy of "ver.wait-<kind>": a step, then (v2 only) the
// patched screen, then the wait (a signal or a child), then which branch
// the run took.
func waitFlow(version, kind string) *voltro.Workflow[int, string] {
	return voltro.NewWorkflow("ver.wait-"+kind, func(wc *voltro.WorkflowContext, n int) (string, error) {
		if _, err := voltro.Step(wc, "reserve", func(context.Context) (int, error) { return n, nil }); err != nil {
			return "", err
		}
		branch := "old branch"
		if version == "v2" && voltro.Patched(wc, "screen") {
			if _, err := voltro.Step(wc, "screen", func(context.Context) (bool, error) { return true, nil }); err != nil {
				return "", err
			}
			branch = "new branch"
		}
		var err error
		if kind == "signal" {
			_, err = voltro.AwaitSignal[bool](wc, "ship", 0)
		} else {
			_, err = voltro.ExecuteChild(wc, screenChild, n)
		}
		return branch, err
	})
}

func TestPatchWhereOldRunsWait(t *testing.T) {
	for _, kind := range []string{"signal", "child"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			url := "sqlite:" + filepath.Join(t.TempDir(), "ver.db")
			v1 := txApp(t, url, "50ms", waitFlow("v1", kind), screenChild)
			h, err := waitFlow("any", kind).Start(ctx, v1, 1)
			if err != nil {
				t.Fatal(err)
			}
			waitSuspended(t, v1, h.ID)
			child := h.ID + "/1" // the child's id: the parent's and the operation's
			if kind == "child" {
				waitSuspended(t, v1, child)
			}
			_ = v1.Close(ctx)

			v2 := txApp(t, url, "50ms", waitFlow("v2", kind), screenChild)
			if kind == "signal" {
				if _, err := v2.SignalWorkflow(ctx, h.ID, "ship", true); err != nil {
					t.Fatal(err)
				}
			} else if _, err := v2.SignalWorkflow(ctx, child, "go", "ok"); err != nil {
				t.Fatal(err)
			}
			var got string
			testwait.For(t, 30*time.Second, h.ID+" to finish on v2", func() bool {
				st, err := v2.WorkflowStatusOf(ctx, h.ID)
				if err != nil || !st.Status.Terminal() {
					return false
				}
				got, err = voltro.GetHandle[string](v2, h.ID).Result(ctx)
				if err != nil {
					t.Fatalf("%s on v2: %v", h.ID, err)
				}
				return true
			})
			if got != "old branch" {
				t.Fatalf("a run waiting on a %s where v2 placed its patch took the %s on v2, want the old branch: it got there under v1", kind, got)
			}
		})
	}
}

// renamedWait is one deploy of "ver.renamed": a step, then a wait for the
// signal "ship" (v1), or (changes made without Patched) for "dispatch"
// ("renamed") or none ("removed").
func renamedWait(version string) *voltro.Workflow[int, string] {
	return voltro.NewWorkflow("ver.renamed", func(wc *voltro.WorkflowContext, n int) (string, error) {
		if _, err := voltro.Step(wc, "reserve", func(context.Context) (int, error) { return n, nil }); err != nil {
			return "", err
		}
		signal := "ship"
		switch version {
		case "removed":
			return version, nil
		case "renamed":
			signal = "dispatch"
		}
		_, err := voltro.AwaitSignal[bool](wc, signal, 0)
		return version, err
	})
}

// The determinism guard covers the wait a run is suspended on, which the
// journal does not hold yet: code deployed since that waits on something
// else there fails the run as diverged instead of leaving it waiting, for
// ever, on what the old code never sent it.
func TestChangedWaitIsADivergence(t *testing.T) {
	for _, c := range []struct{ change, asked string }{
		{"renamed", `the code asked for signal "dispatch"`},
		{"removed", "the code asked for the end of the workflow"},
	} {
		t.Run(c.change, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			url := "sqlite:" + filepath.Join(t.TempDir(), "ver.db")
			v1 := txApp(t, url, "50ms", renamedWait("v1"))
			h, err := renamedWait("any").Start(ctx, v1, 1)
			if err != nil {
				t.Fatal(err)
			}
			waitSuspended(t, v1, h.ID)
			_ = v1.Close(ctx)

			v2 := txApp(t, url, "50ms", renamedWait(c.change))
			if _, err := v2.SignalWorkflow(ctx, h.ID, "ship", true); err != nil {
				t.Fatal(err)
			}
			var st voltro.WorkflowStatus
			testwait.For(t, 30*time.Second, h.ID+" to end on v2", func() bool {
				st, err = v2.WorkflowStatusOf(ctx, h.ID)
				return err == nil && st.Status.Terminal()
			})
			_, err = voltro.GetHandle[string](v2, h.ID).Result(ctx)
			if !errors.Is(err, voltro.ErrNonDeterminism) || !strings.Contains(err.Error(), `suspended on signal "ship"`) || !strings.Contains(err.Error(), c.asked) {
				t.Fatalf("a run suspended on signal ship, replayed by code with the wait %s: %s, %v; want ErrNonDeterminism naming the wait and %q", c.change, st.Status, err, c.asked)
			}
		})
	}
}

// abortable returns "aborted" when a cancel is requested before its wait,
// and waits for "ship" otherwise: the same code before and after.
var abortable = voltro.NewWorkflow("ver.abortable", func(wc *voltro.WorkflowContext, n int) (string, error) {
	if _, err := voltro.Step(wc, "reserve", func(context.Context) (int, error) { return n, nil }); err != nil {
		return "", err
	}
	if wc.CancelRequested() {
		return "aborted", nil
	}
	_, err := voltro.AwaitSignal[bool](wc, "ship", 0)
	return "shipped", err
})

// Cancelling a suspended run replays it with the cancel requested: code
// that ends there, before the operation it was suspended on, has not
// diverged.
func TestCancelledWaitIsNotADivergence(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	app := txApp(t, "sqlite:"+filepath.Join(t.TempDir(), "ver.db"), "50ms", abortable)
	h, err := abortable.Start(ctx, app, 1)
	if err != nil {
		t.Fatal(err)
	}
	waitSuspended(t, app, h.ID)
	if err := app.CancelWorkflow(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	got, err := h.Result(ctx)
	if err != nil || got != "aborted" {
		t.Fatalf("a run cancelled while suspended, its code returning on CancelRequested: %q, %v; want aborted", got, err)
	}
}
