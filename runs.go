package voltro

// One vocabulary for runs: the App and the Client offer the same
// operations under the same names (Runs is either), each written once
// below on the workflow runtime both hold.

import (
	"context"
	"encoding/json"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/workflow"
)

// StartWorkflow starts a run of the workflow registered as name with input
// (any JSON-encodable value) and returns its id; the workflow need not be
// registered here. WithKey makes it idempotent. Workflow.Start is the typed
// form.
func (a *App) StartWorkflow(ctx context.Context, name string, input any, opts ...StartOption) (string, error) {
	return startWorkflow(ctx, a.in.Workflows, name, input, opts)
}

// StartWorkflow starts a run of the workflow registered as name with input
// (any JSON-encodable value) and returns its id. WithKey makes it
// idempotent.
func (c *Client) StartWorkflow(ctx context.Context, name string, input any, opts ...StartOption) (string, error) {
	return startWorkflow(ctx, c.wf, name, input, opts)
}

func startWorkflow(ctx context.Context, wf *workflow.Engine, name string, input any, opts []StartOption) (string, error) {
	b, err := json.Marshal(input)
	if err != nil {
		return "", errs.Wrap(errs.CodeInvalidArgument, err, "workflow "+name+": cannot encode input")
	}
	if err := checkHost(ctx, wf, name, b, opts); err != nil {
		return "", err
	}
	x, _, err := wf.Start(ctx, name, b, startOptionsOf(opts))
	return x.ID, err
}

// Get returns a run's status. Its Runner is the instance running it now
// (one that holds a live claim on its messages, mid-replay), else the
// last one that ran it.
func (a *App) Get(ctx context.Context, id string) (WorkflowStatus, error) {
	return getRun(ctx, a.in.Workflows, id, true)
}

// Get returns a run's status. Its Runner is the instance running it now
// (one that holds a live claim on its messages, mid-replay), else the
// last one that ran it.
func (c *Client) Get(ctx context.Context, id string) (WorkflowStatus, error) {
	return getRun(ctx, c.wf, id, true)
}

// getRun reads run id; runnerNow looks for the instance running it now.
func getRun(ctx context.Context, wf *workflow.Engine, id string, runnerNow bool) (WorkflowStatus, error) {
	x, err := wf.Get(ctx, id)
	if err != nil {
		return WorkflowStatus{}, err
	}
	if runnerNow {
		if x.Runner, err = wf.RunnerNow(ctx, x); err != nil {
			return WorkflowStatus{}, err
		}
	}
	return withUntil(ctx, wf, x, statusOf(x))
}

// List returns the runs that match f, newest first.
func (a *App) List(ctx context.Context, f ListFilter) ([]WorkflowStatus, error) {
	return listRuns(ctx, a.in.Workflows, f)
}

// List returns the runs that match f, newest first.
func (c *Client) List(ctx context.Context, f ListFilter) ([]WorkflowStatus, error) {
	return listRuns(ctx, c.wf, f)
}

func listRuns(ctx context.Context, wf *workflow.Engine, f ListFilter) ([]WorkflowStatus, error) {
	switch store.ExecStatus(f.Status) {
	case "", store.ExecQueued, store.ExecRunning, store.ExecSuspended, store.ExecCompleted, store.ExecFailed, store.ExecCancelled:
	default:
		return nil, errs.New(errs.CodeInvalidArgument, "run status %q: use queued, running, suspended, completed, failed or cancelled", f.Status)
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	xs, err := wf.List(ctx, store.ExecutionFilter{Status: store.ExecStatus(f.Status), Name: f.Name, Queue: f.Queue, Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]WorkflowStatus, len(xs))
	for i, x := range xs {
		out[i] = statusOf(x)
	}
	return out, nil
}

// Journal returns run id's journal, in order.
func (a *App) Journal(ctx context.Context, id string) ([]JournalEntry, error) {
	return journal(ctx, a.in.Workflows, id)
}

// Journal returns run id's journal, in order.
func (c *Client) Journal(ctx context.Context, id string) ([]JournalEntry, error) {
	return journal(ctx, c.wf, id)
}

func journal(ctx context.Context, wf *workflow.Engine, id string) ([]JournalEntry, error) {
	entries, err := wf.Journal(ctx, id)
	if err != nil {
		return nil, err
	}
	tries := map[int][]StepTry{}
	if steps, err := wf.StepAttempts(ctx, id); err == nil { // a store without attempts has none
		for _, s := range steps {
			tries[s.Seq] = append(tries[s.Seq], StepTry{Attempt: s.Attempt, Status: TryStatus(s.Status), Runner: s.Runner, ReplicaID: s.ReplicaID, Error: s.Error})
		}
	}
	out := make([]JournalEntry, 0, len(entries))
	for _, e := range entries {
		je := JournalEntry{Seq: e.Seq, Kind: JournalKind(e.Kind), Name: e.Name, Attempts: e.Attempts, Runner: e.Runner, FinishedAt: e.FinishedAt, Tries: tries[e.Seq]}
		if json.Valid(e.Result) {
			je.Result = e.Result
		}
		if len(e.Error) > 0 {
			je.Error = mirrorOf(errs.Decode(e.Error))
		}
		out = append(out, je)
	}
	return out, nil
}

// Cancel asks a run to stop; its children follow their parent-close
// policy.
func (a *App) Cancel(ctx context.Context, id string) error { return a.in.Workflows.Cancel(ctx, id) }

// Cancel asks a run to stop; its children follow their parent-close
// policy.
func (c *Client) Cancel(ctx context.Context, id string) error { return c.wf.Cancel(ctx, id) }

// CancelRun is Cancel, reporting what it did.
func (a *App) CancelRun(ctx context.Context, id string) (CancelOutcome, error) {
	return cancelRun(ctx, a.in.Workflows, id)
}

// CancelRun is Cancel, reporting what it did.
func (c *Client) CancelRun(ctx context.Context, id string) (CancelOutcome, error) {
	return cancelRun(ctx, c.wf, id)
}

func cancelRun(ctx context.Context, wf *workflow.Engine, id string) (CancelOutcome, error) {
	out, err := wf.CancelRun(ctx, id)
	return CancelOutcome{Requested: out.Requested, Finished: out.Finished, DeadLettered: out.DeadLettered, Status: RunStatus(out.Status)}, err
}

// Signal sends a named signal with a JSON-encodable payload. It reports
// false when a signal of that name was already delivered (the first one
// wins).
func (a *App) Signal(ctx context.Context, id, name string, payload any) (bool, error) {
	return signal(ctx, a.in.Workflows, id, name, payload)
}

// Signal sends a named signal with a JSON-encodable payload. It reports
// false when a signal of that name was already delivered (the first one
// wins).
func (c *Client) Signal(ctx context.Context, id, name string, payload any) (bool, error) {
	return signal(ctx, c.wf, id, name, payload)
}

func signal(ctx context.Context, wf *workflow.Engine, id, name string, payload any) (bool, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return false, errs.Wrap(errs.CodeInvalidArgument, err, "signal payload")
	}
	return wf.Signal(ctx, id, name, b)
}

// Resume puts a failed or cancelled run back to work with its whole
// journal: it goes on from where it stopped, with the code deployed now (a
// run that failed with ErrNonDeterminism, after the fix is deployed). A
// cancelled run's children that its cancel ended (parent-close terminate or
// request-cancel, their outcome not yet in its journal) are resumed first,
// so it goes on waiting for them (docs/versioning.md). A run in any other
// status gets an error matching ErrInvalidArgument.
func (a *App) Resume(ctx context.Context, id string) error { return a.in.Workflows.Resume(ctx, id) }

// Resume puts a failed or cancelled run back to work with its whole
// journal, with the children its cancel ended (see App.Resume).
func (c *Client) Resume(ctx context.Context, id string) error { return c.wf.Resume(ctx, id) }

// Retry puts a failed or cancelled run back to work from its last good
// step: the journal is kept up to its first failed operation, which runs
// again with everything after it. A run in any other status gets an error
// matching ErrInvalidArgument.
func (a *App) Retry(ctx context.Context, id string) error { return a.in.Workflows.Retry(ctx, id) }

// Retry puts a failed or cancelled run back to work from its last good
// step (see App.Retry).
func (c *Client) Retry(ctx context.Context, id string) error { return c.wf.Retry(ctx, id) }

// Await waits for run id to finish and returns its output as JSON, or its
// error. GetHandle[O](a, id).Result decodes the output instead. An id with
// no run is waited for until ctx ends (an error matching ErrDeadline), not
// ErrNotFound: it may be a StartTx start not committed yet (see
// GetHandle). Bound ctx, or call Get first to learn that an id is unknown.
func (a *App) Await(ctx context.Context, id string) (json.RawMessage, error) {
	return GetHandle[json.RawMessage](a, id).Result(ctx)
}

// Await waits for run id to finish and returns its output as JSON, or its
// error (see App.Await).
func (c *Client) Await(ctx context.Context, id string) (json.RawMessage, error) {
	return GetHandle[json.RawMessage](c, id).Result(ctx)
}
