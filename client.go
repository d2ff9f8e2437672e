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

// Runs is what starts and reads workflow runs: an *App, or a *Client. Both
// offer the same operations under the same names (runs.go).
type Runs interface {
	StartWorkflow(ctx context.Context, name string, input any, opts ...StartOption) (string, error)
	Get(ctx context.Context, id string) (WorkflowStatus, error)
	List(ctx context.Context, f ListFilter) ([]WorkflowStatus, error)
	Journal(ctx context.Context, id string) ([]JournalEntry, error)
	Cancel(ctx context.Context, id string) error
	CancelRun(ctx context.Context, id string) (CancelOutcome, error)
	Signal(ctx context.Context, id, name string, payload any) (bool, error)
	Resume(ctx context.Context, id string) error
	Retry(ctx context.Context, id string) error
	Await(ctx context.Context, id string) (json.RawMessage, error)
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

// ListFilter selects runs for List; zero fields match every run.
type ListFilter struct {
	Status RunStatus
	Name   string // workflow name
	Queue  string // runs started on this queue (OnQueue)
	Limit  int    // default 50
}
