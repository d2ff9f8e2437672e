package voltro_test

// WorkflowStatus.Waiting types what a suspended run waits on: a signal by
// name with its timeout, a sleep with its end, a child by id; nil once the
// run goes on. On the memory store and on a SQLite file.

import (
	"context"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/voltrotest"
)

var waitSignal = voltro.NewWorkflow("waiting.signal", func(wc *voltro.WorkflowContext, _ struct{}) (bool, error) {
	return voltro.AwaitSignal[bool](wc, "go", time.Hour)
})

var waitSleep = voltro.NewWorkflow("waiting.sleep", func(wc *voltro.WorkflowContext, _ struct{}) (string, error) {
	wc.Sleep(2 * time.Hour)
	return "slept", nil
})

var waitChild = voltro.NewWorkflow("waiting.child", func(wc *voltro.WorkflowContext, _ struct{}) (bool, error) {
	return voltro.ExecuteChild(wc, waitSignal, struct{}{})
})

func TestWorkflowStatusTypesWhatARunWaitsOn(t *testing.T) {
	testWaiting(t, voltrotest.New(t, waitSignal, waitSleep, waitChild))
}

// On a SQL store the timers' due times come from its messages table.
func TestWorkflowStatusTypesWhatARunWaitsOnSQLite(t *testing.T) {
	testWaiting(t, voltrotest.NewSQLite(t, waitSignal, waitSleep, waitChild))
}

func testWaiting(t *testing.T, env *voltrotest.Env) {
	ctx := context.Background()
	start := env.Now()

	sig, err := waitSignal.Start(ctx, env.App(), struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitFor(sig.ID, voltrotest.AwaitingSignal("go"))
	w := st.Waiting
	if w == nil || w.Kind != voltro.WaitSignal || w.Name != "go" || w.Sleep != 0 {
		t.Fatalf("a run awaiting signal go: Waiting %+v (WaitingOn %q)", w, st.WaitingOn)
	}
	if w.Until.Before(start.Add(time.Hour)) || w.Until.After(env.Now().Add(time.Hour)) {
		t.Fatalf("the signal's timeout is due at %s; want an hour after it began waiting (%s)", w.Until, start)
	}

	sl, err := waitSleep.Start(ctx, env.App(), struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	st = env.WaitFor(sl.ID, voltrotest.Sleeping())
	if w := st.Waiting; w == nil || w.Kind != voltro.WaitSleep || w.Name != "" || w.Sleep != 2*time.Hour || w.Until.Before(start.Add(2*time.Hour)) {
		t.Fatalf("a sleeping run: Waiting %+v (WaitingOn %q)", w, st.WaitingOn)
	}

	parent, err := waitChild.Start(ctx, env.App(), struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	st = env.WaitFor(parent.ID, voltrotest.AwaitingChild())
	if w := st.Waiting; w == nil || w.Kind != voltro.WaitChild || w.Name == "" || !w.Until.IsZero() {
		t.Fatalf("a run awaiting its child: Waiting %+v (WaitingOn %q)", w, st.WaitingOn)
	}
	child, err := env.App().WorkflowStatusOf(ctx, st.Waiting.Name)
	if err != nil || child.ParentID != parent.ID {
		t.Fatalf("Waiting.Name of a parent is its child's id: %+v, %v", child, err)
	}

	if _, err := env.App().SignalWorkflow(ctx, sig.ID, "go", true); err != nil {
		t.Fatal(err)
	}
	st = env.WaitFor(sig.ID, voltrotest.Finished())
	if st.Waiting != nil {
		t.Fatalf("a finished run waits on nothing: %+v", st.Waiting)
	}
}
