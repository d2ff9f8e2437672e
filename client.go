package voltro

// The client: start, signal, cancel, read and await workflow runs, and send
// entity messages, from a process that hosts nothing (a web tier, a
// script, the CLI). It joins no
// shard ring: no runner row, no shard locks, no runner port, no boot lines.

import (
	"context"
	"encoding/json"

	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/workflow"
)

// Runs is what starts and reads workflow runs: an *App, or a *Client.
type Runs interface {
	workflows() (*workflow.Engine, error)
}

var (
	_ Runs = (*App)(nil)
	_ Runs = (*Client)(nil)
)

// Client starts, signals, cancels, reads and awaits workflow runs, and
// sends entity messages (Entity.Send, Entity.SendTx), on the cluster's
// database without hosting anything: the instances that host a workflow
// or an entity type run what the client starts or sends. A run started by
// name for a workflow no instance hosts yet is stored and waits for one
// that does; so does a message.
type Client struct {
	wf    *workflow.Engine
	close func()
}

// NewClient opens the database (DB_URL, or WithDB) as a client. It takes
// WithDB, WithConfig, WithEnv and WithLogger (default: slog.Default()),
// resolved as New resolves them; the store is
// migrated and its cluster config checked as New does. Close it when done.
func NewClient(ctx context.Context, opts ...Option) (*Client, error) {
	cfg, log, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	if cfg.DB.Dialect == store.Memory {
		return nil, errs.New(errs.CodeInvalidArgument, "a client needs the cluster's database: a memory store is the process's own (use the App)")
	}
	cfg.Warnings = nil // about hosting, which a client does not do
	wf, done, err := workflow.OpenClient(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	return &Client{wf: wf, close: done}, nil
}

func (c *Client) workflows() (*workflow.Engine, error) { return c.wf, nil }

func (c *Client) sender() *engine.Engine { return c.wf.Core() }

// Close closes the client's database connections.
func (c *Client) Close() error {
	c.close()
	return nil
}

// Start starts a run of the workflow registered as name with input (any
// JSON-encodable value) and returns its id. WithKey makes it idempotent.
func (c *Client) Start(ctx context.Context, name string, input any, opts ...StartOption) (string, error) {
	b, err := json.Marshal(input)
	if err != nil {
		return "", errs.Wrap(errs.CodeInvalidArgument, err, "workflow "+name+": cannot encode input")
	}
	if err := checkHost(ctx, c.wf, name, b, opts); err != nil {
		return "", err
	}
	x, _, err := c.wf.Start(ctx, name, b, startOptionsOf(opts))
	return x.ID, err
}

// Signal sends a named signal with a JSON-encodable payload; false when a
// signal of that name was delivered first.
func (c *Client) Signal(ctx context.Context, id, name string, payload any) (bool, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return false, errs.Wrap(errs.CodeInvalidArgument, err, "signal payload")
	}
	return c.wf.Signal(ctx, id, name, b)
}

// Cancel asks a run to stop (see App.CancelWorkflow).
func (c *Client) Cancel(ctx context.Context, id string) error { return c.wf.Cancel(ctx, id) }

// Resume puts a failed or cancelled run back to work with its whole
// journal, with the children its cancel ended (see App.ResumeWorkflow).
func (c *Client) Resume(ctx context.Context, id string) error { return c.wf.Resume(ctx, id) }

// Retry puts a failed or cancelled run back to work from its last good
// step (see App.RetryWorkflow).
func (c *Client) Retry(ctx context.Context, id string) error { return c.wf.Retry(ctx, id) }

// Get returns a run's status. Its Runner is the instance running it now
// (one that holds a live claim on its messages, mid-replay), else the
// last one that ran it.
func (c *Client) Get(ctx context.Context, id string) (WorkflowStatus, error) {
	x, err := c.wf.Get(ctx, id)
	if err != nil {
		return WorkflowStatus{}, err
	}
	if x.Runner, err = c.wf.RunnerNow(ctx, x); err != nil {
		return WorkflowStatus{}, err
	}
	return withUntil(ctx, c.wf, x, statusOf(x))
}

// ListFilter selects runs for Client.List; zero fields match every run.
type ListFilter struct {
	Status RunStatus
	Name   string // workflow name
	Limit  int    // default 50
}

// List returns the runs that match f, newest first.
func (c *Client) List(ctx context.Context, f ListFilter) ([]WorkflowStatus, error) {
	switch store.ExecStatus(f.Status) {
	case "", store.ExecRunning, store.ExecSuspended, store.ExecCompleted, store.ExecFailed, store.ExecCancelled:
	default:
		return nil, errs.New(errs.CodeInvalidArgument, "run status %q: use running, suspended, completed, failed or cancelled", f.Status)
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	xs, err := c.wf.List(ctx, store.ExecutionFilter{Status: store.ExecStatus(f.Status), Name: f.Name, Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]WorkflowStatus, len(xs))
	for i, x := range xs {
		out[i] = statusOf(x)
	}
	return out, nil
}

// Await waits for run id to finish and returns its output as JSON, or its
// error. GetHandle[O](c, id).Result decodes the output instead. An id with
// no run is waited for until ctx ends (an error matching ErrDeadline), not
// ErrNotFound: it may be a StartTx start not committed yet (see
// GetHandle). Bound ctx, or call Get first to learn that an id is unknown.
func (c *Client) Await(ctx context.Context, id string) (json.RawMessage, error) {
	out, err := GetHandle[json.RawMessage](c, id).Result(ctx)
	return out, err
}
