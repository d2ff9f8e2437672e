package voltrotest

// Waiting for a run to reach a state, named by a typed Condition instead
// of a status string, with time skipping ahead while the run waits on it.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/workflow"
)

// Condition is a state of a run that WaitFor waits for.
type Condition struct {
	what string
	met  func(r run) bool
}

// String names the condition as failures report it.
func (c Condition) String() string { return c.what }

// run is what a condition looks at.
type run struct {
	x       store.Execution
	waiting workflow.Waiting // when suspended
	journal []store.JournalEntry
}

func (r run) suspendedOn(kind store.JournalKind) bool {
	return r.x.Status == store.ExecSuspended && r.waiting.Kind == kind
}

// AwaitingSignal holds while the run is suspended waiting for the signal
// name.
func AwaitingSignal(name string) Condition {
	return Condition{what: fmt.Sprintf("awaiting signal %q", name), met: func(r run) bool {
		return r.suspendedOn(store.JournalSignal) && r.waiting.Name == name
	}}
}

// Sleeping holds while the run is suspended in a durable sleep.
func Sleeping() Condition {
	return Condition{what: "sleeping", met: func(r run) bool { return r.suspendedOn(store.JournalSleep) }}
}

// AwaitingChild holds while the run is suspended waiting for a child run.
func AwaitingChild() Condition {
	return Condition{what: "awaiting a child", met: func(r run) bool { return r.suspendedOn(store.JournalChild) }}
}

// Selecting holds while the run is suspended in a Select, waiting for a
// timer, signal or child among its futures.
func Selecting() Condition {
	return Condition{what: "suspended in a select", met: func(r run) bool { return r.suspendedOn(store.JournalSelect) }}
}

// StepCompleted holds once the run's journal records the step name as
// completed (not failed).
func StepCompleted(name string) Condition {
	return Condition{what: fmt.Sprintf("step %q completed", name), met: func(r run) bool {
		return slices.ContainsFunc(r.journal, func(e store.JournalEntry) bool {
			return e.Kind == store.JournalStep && e.Name == name && len(e.Error) == 0
		})
	}}
}

// Finished holds once the run completed, failed or was cancelled.
func Finished() Condition {
	return Condition{what: "finished", met: func(r run) bool { return r.x.Status.Terminal() }}
}

// wait is one WaitFor under way, owned by the clock loop.
type wait struct {
	id     string
	cond   Condition
	result chan error
}

func (w *wait) finish(err error) { w.result <- err }

// check reports (true) a condition met, or one that can no longer be.
func (w *wait) check(ctx context.Context, e *Env) bool {
	r, err := e.look(ctx, w.id)
	switch {
	case errors.Is(err, errs.ErrNotFound):
		return false // not started yet
	case err != nil:
		w.finish(err)
		return true
	case w.cond.met(r):
		w.finish(nil)
		return true
	case r.x.Status.Terminal():
		w.finish(fmt.Errorf("run %s %s before it was %s", w.id, describe(r), w.cond))
		return true
	}
	return false
}

// stuck ends a wait the App can no longer satisfy by itself.
func (w *wait) stuck(ctx context.Context, e *Env) bool {
	r, err := e.look(ctx, w.id)
	state := "not started"
	if err == nil {
		state = describe(r)
	}
	w.finish(fmt.Errorf("run %s is %s; nothing runs and nothing is due, so it cannot get to %s unless the test acts (a signal, a start)", w.id, state, w.cond))
	return true
}

func describe(r run) string {
	if r.x.Status == store.ExecSuspended && r.x.WaitingOn != "" {
		return "suspended on " + r.x.WaitingOn
	}
	return string(r.x.Status)
}

func (e *Env) look(ctx context.Context, id string) (run, error) {
	wf := e.inst.Workflows
	x, err := wf.Get(ctx, id)
	if err != nil {
		return run{}, err
	}
	r := run{x: x}
	r.waiting, _ = workflow.ParseWaiting(x.WaitingOn)
	if r.journal, err = wf.Journal(ctx, id); err != nil {
		return run{}, err
	}
	return r, nil
}

// WaitFor waits until run id meets c, letting virtual time skip ahead
// meanwhile as Result does, and returns the run's status then. The clock
// does not move past the moment c holds. It fails the test when the run
// finishes without meeting c, or when nothing runs and nothing is due while
// c does not hold (a run waiting for a signal the test has yet to send).
func (e *Env) WaitFor(id string, c Condition) voltro.WorkflowStatus {
	e.t.Helper()
	w := &wait{id: id, cond: c, result: make(chan error, 1)}
	select {
	case e.waits <- w:
	case <-e.stopped:
		e.t.Fatalf("voltrotest: WaitFor(%s, %s): the environment is closed", id, c)
	}
	t := time.NewTimer(settle)
	defer t.Stop()
	select {
	case err := <-w.result:
		if err != nil {
			e.t.Fatalf("voltrotest: WaitFor(%s, %s): %v", id, c, err)
		}
	case <-t.C:
		e.t.Fatalf("voltrotest: WaitFor(%s, %s): not within %s of wall time (a handler or step that does not return?)", id, c, settle)
	}
	st, err := e.app.Get(context.Background(), id)
	if err != nil {
		e.t.Fatalf("voltrotest: WaitFor(%s, %s): %v", id, c, err)
	}
	return st
}
