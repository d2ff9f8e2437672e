package voltro

// The workflow context users write against: a documented wrapper of the
// engine's context, so go doc shows every method workflow code calls, and
// the typed start information and parent-close policy it reports.

import (
	"context"
	"log/slog"
	"time"

	"github.com/voltro/voltro/internal/workflow"
)

// WorkflowContext is what workflow code gets: a separate type from
// context.Context on purpose. Do I/O only inside Step (or Go); wait with
// Sleep, AwaitSignal and ExecuteChild, or start work and race it with Go,
// StartChild, Timer, SignalFuture, Select and All.
//
// Each operation (Step, Sleep, AwaitSignal, ExecuteChild) has a sequence
// number in the run's journal. When the code replays (after a wake-up, a
// restart or a failover), a journaled operation returns its recorded
// outcome at once, and the first one not yet journaled runs, or suspends the
// run. Suspending unwinds the workflow function with a panic that voltro
// recovers; a recover() in workflow code may catch it, but cannot cancel
// it: once an operation suspends, every later operation unwinds again and
// whatever the function returns is ignored, so the run stays suspended
// where it was. Re-panic values you did not raise yourself.
type WorkflowContext struct {
	c *workflow.Context
}

// Context returns a context.Context for the current replay, cancelled when
// this instance loses the run's shard. Pass it to the I/O inside a step (a
// step's function gets its own, derived one).
func (wc *WorkflowContext) Context() context.Context { return wc.c.Context() }

// ExecutionID is the run's id: the same on every replay and every instance.
func (wc *WorkflowContext) ExecutionID() string { return wc.c.ExecutionID() }

// WorkflowName is the name the workflow was registered with.
func (wc *WorkflowContext) WorkflowName() string { return wc.c.WorkflowName() }

// Logger is the app's logger with the workflow name and execution id
// attached.
func (wc *WorkflowContext) Logger() *slog.Logger { return wc.c.Logger() }

// CancelRequested reports whether someone asked to cancel this run
// (App.CancelWorkflow, voltro workflows cancel). The next operation that is
// not yet journaled ends the run with an error matching ErrCancelled.
func (wc *WorkflowContext) CancelRequested() bool { return wc.c.CancelRequested() }

// Sleep suspends the run for d, durably: no goroutine waits; a timer wakes
// the run on whichever instance owns its shard once d has passed, also
// after a restart. On replay a finished sleep returns at once.
func (wc *WorkflowContext) Sleep(d time.Duration) { wc.c.Sleep(d) }

// StartInfo returns what the run was started with (who, from where, under
// which trace, by which parent), read from the store the first time a
// replay asks.
func (wc *WorkflowContext) StartInfo() (StartInfo, error) {
	si, err := wc.c.StartInfo()
	if err != nil {
		return StartInfo{}, err
	}
	return StartInfo{Subject: si.Subject, Source: StartSource(si.Source), Trace: si.Trace, ParentID: si.ParentID, ParentClose: ParentClosePolicy(si.ParentClose)}, nil
}

// StartInfo is what a run was started with, from WorkflowContext.StartInfo.
type StartInfo struct {
	Subject     string            // who started it (WithSubject); "" if not given
	Source      StartSource       // where the start came from
	Trace       string            // the W3C traceparent at the start (WithTrace, or the caller's span)
	ParentID    string            // the parent run's id, for a child
	ParentClose ParentClosePolicy // a child's parent-close policy; "" for a top-level run
}

// StartSource says where a run's start came from.
type StartSource string

// Start sources.
const (
	SourceAPI      StartSource = "api"      // Workflow.Start or Run in Go code
	SourceCLI      StartSource = "cli"      // voltro workflows start
	SourceSchedule StartSource = "schedule" // a schedule with cluster coordination
	SourceChild    StartSource = "child"    // ExecuteChild
	// SourceRouted: a start without a key, subject or source that the
	// instance it was made on sent to the instance running the run's shard,
	// which records no more than that (anyone holding the cluster secret
	// can make such a start; see docs/security.md).
	SourceRouted StartSource = "routed"
)

// ParentClosePolicy says what happens to an unfinished child run when its
// parent finishes first (ParentClose).
type ParentClosePolicy string

// Parent-close policies.
const (
	// ParentCloseTerminate cancels the child (the default).
	ParentCloseTerminate ParentClosePolicy = "terminate"
	// ParentCloseRequestCancel asks the child to cancel, as
	// App.CancelWorkflow does.
	ParentCloseRequestCancel ParentClosePolicy = "request-cancel"
	// ParentCloseAbandon leaves the child running on its own.
	ParentCloseAbandon ParentClosePolicy = "abandon"
)

// Patched reports whether the run takes the new branch of the change named
// id, for a deploy that changes a workflow while runs are in flight:
//
//	if voltro.Patched(wc, "charge-with-tax") {
//		total, err = voltro.Step(wc, "charge-with-tax", chargeWithTax)
//	} else {
//		total, err = voltro.Step(wc, "charge", charge)
//	}
//
// A run whose journal recorded the old branch here (it passed this point
// under the old code) gets false on every replay, on any instance. A run
// that reaches this point for the first time (every new run, and an
// in-flight one that had not got this far) records a marker in its
// journal and gets true from then on. When no run that took the old
// branch is left, a later deploy deletes it and calls DeprecatePatch
// instead; once no run with the marker is left either, a third drops that
// too. See docs/versioning.md.
func Patched(wc *WorkflowContext, id string) bool { return wc.c.Patched(id) }

// DeprecatePatch replaces Patched(wc, id) once the old branch is deleted:
// runs that recorded the marker consume it on replay, new runs record
// nothing.
func DeprecatePatch(wc *WorkflowContext, id string) { wc.c.DeprecatePatch(id) }
