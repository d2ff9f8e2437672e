package voltro

// The names the App used before it spoke the Client's vocabulary (runs.go),
// kept for one release.

import "context"

// WorkflowStatusOf returns a run's status; its Runner is the last instance
// that ran it.
//
// Deprecated: use Get, which the Client has too (its Runner is the
// instance running the run now).
func (a *App) WorkflowStatusOf(ctx context.Context, id string) (WorkflowStatus, error) {
	return getRun(ctx, a.in.Workflows, id, false)
}

// CancelWorkflow asks a run to stop.
//
// Deprecated: use Cancel (or CancelRun), as on the Client.
func (a *App) CancelWorkflow(ctx context.Context, id string) error { return a.Cancel(ctx, id) }

// SignalWorkflow sends a named signal.
//
// Deprecated: use Signal, as on the Client.
func (a *App) SignalWorkflow(ctx context.Context, id, name string, payload any) (bool, error) {
	return a.Signal(ctx, id, name, payload)
}

// ResumeWorkflow puts a failed or cancelled run back to work with its
// whole journal.
//
// Deprecated: use Resume, as on the Client.
func (a *App) ResumeWorkflow(ctx context.Context, id string) error { return a.Resume(ctx, id) }

// RetryWorkflow puts a failed or cancelled run back to work from its last
// good step.
//
// Deprecated: use Retry, as on the Client.
func (a *App) RetryWorkflow(ctx context.Context, id string) error { return a.Retry(ctx, id) }

// Start starts a run of the workflow registered as name.
//
// Deprecated: use StartWorkflow, as on the App (whose Start starts the
// instance).
func (c *Client) Start(ctx context.Context, name string, input any, opts ...StartOption) (string, error) {
	return c.StartWorkflow(ctx, name, input, opts...)
}

// Ready is Health flattened to text: the verdict, and each problem as
// "kind: detail".
//
// Deprecated: use Health, whose problems are typed.
func (a *App) Ready(ctx context.Context) (bool, []string) {
	h := a.Health(ctx)
	var why []string
	for _, p := range h.Problems {
		why = append(why, string(p.Kind)+": "+p.Detail)
	}
	return h.Ready, why
}
