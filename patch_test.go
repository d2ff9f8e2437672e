package voltro_test

// Patched and DeprecatePatch across three deploys of one workflow on one
// SQLite file: v1 (the old code), v2 (the change behind Patched) and v3
// (the old branch deleted, DeprecatePatch in its place).

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testwait"
)

// chargeFlow is one deploy of workflow "ver.charge": charge (how depends
// on the version), wait for "ship", then report.
func chargeFlow(version string) *voltro.Workflow[int, string] {
	return voltro.NewWorkflow("ver.charge", func(wc *voltro.WorkflowContext, amount int) (string, error) {
		charge := func(name string, total int) (int, error) {
			return voltro.Step(wc, name, func(context.Context) (int, error) { return total, nil })
		}
		var total int
		var err error
		switch version {
		case "v1":
			total, err = charge("charge", amount)
		case "v2":
			if voltro.Patched(wc, "tax") {
				total, err = charge("charge-with-tax", amount*2)
			} else {
				total, err = charge("charge", amount)
			}
		case "v3":
			voltro.DeprecatePatch(wc, "tax")
			total, err = charge("charge-with-tax", amount*2)
		}
		if err != nil {
			return "", err
		}
		if _, err := voltro.AwaitSignal[bool](wc, "ship", 0); err != nil {
			return "", err
		}
		return version + "-code charged " + strconv.Itoa(total), nil
	})
}

func deploy(t *testing.T, url, version string) *voltro.App {
	t.Helper()
	app := txApp(t, url, "50ms", chargeFlow(version))
	return app
}

func waitSuspended(t *testing.T, app *voltro.App, id string) {
	t.Helper()
	testwait.For(t, 30*time.Second, id+" to wait for its signal", func() bool {
		st, err := app.WorkflowStatusOf(context.Background(), id)
		return err == nil && st.Status == voltro.StatusSuspended
	})
}

func result(t *testing.T, app *voltro.App, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := app.SignalWorkflow(ctx, id, "ship", true); err != nil {
		t.Fatal(err)
	}
	out, err := voltro.GetHandle[string](app, id).Result(ctx)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return out
}

func TestPatchedAcrossDeploys(t *testing.T) {
	ctx := context.Background()
	url := "sqlite:" + filepath.Join(t.TempDir(), "ver.db")
	start := func(app *voltro.App, key string) string {
		h, err := chargeFlow("any").Start(ctx, app, 10, voltro.WithKey(key))
		if err != nil {
			t.Fatal(err)
		}
		waitSuspended(t, app, h.ID)
		return h.ID
	}
	v1 := deploy(t, url, "v1")
	old := start(v1, "old") // charged under v1, waiting for "ship"
	_ = v1.Close(ctx)

	v2 := deploy(t, url, "v2")
	mid := start(v2, "mid") // charged under v2: the marker is in its journal
	if got := result(t, v2, old); got != "v2-code charged 10" {
		t.Fatalf("the run charged under v1 must keep the old branch on v2: %q", got)
	}
	fresh := start(v2, "fresh")
	if got := result(t, v2, fresh); got != "v2-code charged 20" {
		t.Fatalf("a new run on v2 must take the patched branch: %q", got)
	}
	_ = v2.Close(ctx)

	v3 := deploy(t, url, "v3")
	if got := result(t, v3, mid); got != "v3-code charged 20" {
		t.Fatalf("a run with the marker must replay on v3, where DeprecatePatch stands: %q", got)
	}
	if got := result(t, v3, start(v3, "new3")); got != "v3-code charged 20" {
		t.Fatalf("a new run on v3: %q", got)
	}
}
