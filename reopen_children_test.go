// Resuming a parent cancelled while it waited on a child: the child its
// cancel ended (parent-close terminate) is resumed with it, so the parent
// really goes on and finishes with the child's result.

package voltro_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testwait"
)

var reopenKid = voltro.NewWorkflow("reopenkid.child", func(wc *voltro.WorkflowContext, in string) (string, error) {
	if _, err := voltro.AwaitSignal[bool](wc, "go", 0); err != nil {
		return "", err
	}
	return "kid " + in, nil
})

var reopenParent = voltro.NewWorkflow("reopenkid.parent", func(wc *voltro.WorkflowContext, in string) (string, error) {
	out, err := voltro.ExecuteChild(wc, reopenKid, in)
	if err != nil {
		return "", err
	}
	return "parent of " + out, nil
})

func testResumeParentResumesChild(t *testing.T, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	app := txApp(t, url, "50ms", reopenKid, reopenParent)
	h, err := reopenParent.Start(ctx, app, "ada")
	if err != nil {
		t.Fatal(err)
	}
	kid := h.ID + "/0"
	waitSuspended(t, app, kid)
	if err := app.CancelWorkflow(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Result(ctx); !errors.Is(err, voltro.ErrCancelled) {
		t.Fatalf("the cancelled parent: %v", err)
	}
	status := func(id string) voltro.RunStatus {
		st, err := app.WorkflowStatusOf(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return st.Status
	}
	testwait.For(t, 30*time.Second, "the parent's cancel to end its child", func() bool { return status(kid) == voltro.StatusCancelled })
	if err := app.ResumeWorkflow(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	waitSuspended(t, app, kid)
	if ok, err := app.SignalWorkflow(ctx, kid, "go", true); err != nil || !ok {
		t.Fatalf("signal the resumed child: %v, %v", ok, err)
	}
	if out, err := h.Result(ctx); err != nil || out != "parent of kid ada" {
		t.Fatalf("the resumed parent: %q, %v", out, err)
	}
}

func TestResumeParentResumesChildMemory(t *testing.T) {
	testResumeParentResumesChild(t, "memory:")
}

func TestResumeParentResumesChildSQLite(t *testing.T) {
	testResumeParentResumesChild(t, "sqlite:"+filepath.Join(t.TempDir(), "kids.db"))
}

func TestResumeParentResumesChildPostgres(t *testing.T) {
	testResumeParentResumesChild(t, txPostgres(t, "reopenkids").url)
}
