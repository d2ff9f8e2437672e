package voltro_test

// Workflow code that recovers voltro's suspension cannot break it: the run
// still suspends where it was and resumes from there.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testwait"
)

// memApp is a started app on the memory store with items registered,
// closed at the end of the test.
func memApp(t *testing.T, items ...voltro.Registrable) *voltro.App {
	t.Helper()
	app := appAt(t, "memory:", items...)
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	return app
}

func TestSuspensionSurvivesARecoverInWorkflowCode(t *testing.T) {
	// guarded turns a panic into an error, as much code does.
	guarded := func(f func()) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("recovered: %v", r)
			}
		}()
		f()
		return nil
	}
	var steps int
	wf := voltro.NewWorkflow("t.recover", func(wc *voltro.WorkflowContext, _ int) (string, error) {
		if err := guarded(func() { wc.Sleep(10 * time.Millisecond) }); err != nil {
			// a suspension caught here must not fail the run; going on
			// must not run the next step before the sleep has passed
			if _, serr := voltro.Step(wc, "after-catch", func(context.Context) (int, error) { steps++; return 1, nil }); serr != nil {
				return "", serr
			}
			return "", err
		}
		n, err := voltro.Step(wc, "after-sleep", func(context.Context) (int, error) { steps++; return 2, nil })
		return fmt.Sprintf("woke %d", n), err
	})
	silent := voltro.NewWorkflow("t.recover.silent", func(wc *voltro.WorkflowContext, _ int) (string, error) {
		_ = guarded(func() { _, _ = voltro.AwaitSignal[string](wc, "go", 0) })
		return "returned early", nil // must not finish the run
	})
	app := memApp(t, wf, silent)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := wf.Run(ctx, app, 1)
	if err != nil || got != "woke 2" {
		t.Fatalf("a recovered sleep: got %q, %v; want the run to sleep and finish", got, err)
	}
	if steps != 1 {
		t.Fatalf("%d steps ran, want only the one after the sleep", steps)
	}
	h, err := silent.Start(ctx, app, 1)
	if err != nil {
		t.Fatal(err)
	}
	var st voltro.WorkflowStatus
	waitRun(t, app, h.ID, func(s voltro.WorkflowStatus) bool { st = s; return s.Status != voltro.StatusRunning })
	if st.Status != voltro.StatusSuspended {
		t.Fatalf("a recovered signal wait left the run %s (%v), want suspended", st.Status, st.Error)
	}
	if _, err := app.SignalWorkflow(ctx, h.ID, "go", "x"); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Result(ctx); err != nil || got != "returned early" {
		t.Fatalf("after the signal: %q, %v", got, err)
	}
}

// waitRun waits until run id's status satisfies ok.
func waitRun(t *testing.T, app *voltro.App, id string, ok func(voltro.WorkflowStatus) bool) {
	t.Helper()
	testwait.For(t, 10*time.Second, "run "+id+" to reach the state", func() bool {
		s, err := app.WorkflowStatusOf(context.Background(), id)
		return err == nil && ok(s)
	})
}
