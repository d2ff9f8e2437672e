package voltro

// Durable workflows: a typed Go function of a workflow context and an input.
// Steps are journaled; a run resumes on whichever instance owns it after a
// crash, skipping completed steps; sleeps, signals and child workflows
// suspend the run with no goroutine held.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/workflow"
)

// Workflow is a registered workflow with input I and output O.
type Workflow[I, O any] struct {
	name string
	fn   func(wc *WorkflowContext, in I) (O, error)
	opts workflowOptions
}

// workflowOptions is what the workflow options set.
type workflowOptions struct{ maxParallel int }

// NewWorkflow declares a workflow. Its code must be deterministic: the same
// journal must lead it through the same steps in the same order. Options
// (WithMaxParallel) tune how its runs execute.
func NewWorkflow[I, O any](name string, fn func(wc *WorkflowContext, in I) (O, error), opts ...WorkflowOption) *Workflow[I, O] {
	w := &Workflow[I, O]{name: name, fn: fn}
	for _, o := range opts {
		o(&w.opts)
	}
	return w
}

// WorkflowOption tunes a workflow (WithMaxParallel).
type WorkflowOption func(*workflowOptions)

// WithMaxParallel bounds how many Go steps of one run run at once (default
// 64); the others wait for a free slot, in the order they were started.
// n < 1 fails the workflow's registration.
func WithMaxParallel(n int) WorkflowOption {
	return func(o *workflowOptions) {
		o.maxParallel = n
		if n < 1 {
			o.maxParallel = -1 // refused by Register
		}
	}
}

// Name is the workflow's registered name.
func (w *Workflow[I, O]) Name() string { return w.name }

func (w *Workflow[I, O]) register(a *App) error {
	wf, err := a.workflows()
	if err != nil {
		return err
	}
	// The input's JSON Schema goes into the runner row: a start by name
	// (voltro workflows start) checks its input against it.
	return wf.RegisterWith(w.name, func(c *workflow.Context, input []byte) ([]byte, error) {
		var in I
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, errs.Wrap(errs.CodeDecode, err, "workflow "+w.name+": cannot decode input")
		}
		out, err := w.fn(&WorkflowContext{c: c}, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}, workflow.InputSchema(reflect.TypeFor[I]()), workflow.Options{MaxParallel: w.opts.maxParallel})
}

// StartOption tunes a start (WithKey, WithSubject, WithTrace, OnQueue,
// WithPartitionKey, WithPriority, StartAt, StartAfter).
type StartOption func(*startOptions)

// startOptions is what the start options set.
type startOptions struct {
	workflow.StartOptions
	requireHost bool // RequireHost
}

// startOptionsOf applies opts.
func startOptionsOf(opts []StartOption) workflow.StartOptions {
	var o startOptions
	for _, f := range opts {
		f(&o)
	}
	return o.StartOptions
}

// WithKey makes the start idempotent: the execution id derives from the
// workflow name and key (ExecutionID), so a repeated start returns the same
// run.
func WithKey(key string) StartOption { return func(o *startOptions) { o.Key = key } }

// WithSubject records who started the run (StartInfo.Subject).
func WithSubject(s string) StartOption { return func(o *startOptions) { o.Subject = s } }

// WithTrace records a W3C traceparent in the start context (StartInfo.Trace)
// when ctx carries no span of its own.
func WithTrace(tp string) StartOption { return func(o *startOptions) { o.Trace = tp } }

// Handle names a run and waits for its result.
type Handle[O any] struct {
	ID      string
	a       Runs
	started bool // by a plain Start: the run's row is committed
}

// Start starts a run and returns its handle at once. a is the App, or a
// Client (the workflow need not be registered where it starts).
func (w *Workflow[I, O]) Start(ctx context.Context, a Runs, in I, opts ...StartOption) (*Handle[O], error) {
	wf, err := a.workflows()
	if err != nil {
		return nil, err
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, errs.Wrap(errs.CodeInvalidArgument, err, "workflow "+w.name+": cannot encode input")
	}
	if err := checkHost(ctx, wf, w.name, input, opts); err != nil {
		return nil, err
	}
	x, _, err := wf.Start(ctx, w.name, input, startOptionsOf(opts))
	if err != nil {
		return nil, err
	}
	return &Handle[O]{ID: x.ID, a: a, started: true}, nil
}

// StartTx starts a run in the caller's transaction tx, opened on the
// database of a, the App or a Client (App.DB(), or the application's own
// pool on the same URL): the
// run exists if and only if tx commits, and its owner starts it as soon as
// tx commits. A transaction on another database, or any start on the
// memory store, is refused with an error matching ErrInvalidArgument
// before anything is written. See docs/transactions.md for the pools and
// isolation levels supported.
func (w *Workflow[I, O]) StartTx(ctx context.Context, a Runs, tx *sql.Tx, in I, opts ...StartOption) (*Handle[O], error) {
	wf, err := a.workflows()
	if err != nil {
		return nil, err
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, errs.Wrap(errs.CodeInvalidArgument, err, "workflow "+w.name+": cannot encode input")
	}
	if err := checkHost(ctx, wf, w.name, input, opts); err != nil {
		return nil, err
	}
	id, _, err := wf.StartTx(ctx, tx, w.name, input, startOptionsOf(opts))
	if err != nil {
		return nil, err
	}
	return &Handle[O]{ID: id, a: a}, nil
}

// Run starts a run and waits for its result.
func (w *Workflow[I, O]) Run(ctx context.Context, a Runs, in I, opts ...StartOption) (O, error) {
	h, err := w.Start(ctx, a, in, opts...)
	if err != nil {
		var zero O
		return zero, err
	}
	return h.Result(ctx)
}

// GetHandle returns a handle for an execution id, read through a (the App
// or a Client). Its Result waits for an id with no run yet until ctx ends
// (an error matching ErrDeadline) rather than saying ErrNotFound: the id
// may be a StartTx start whose transaction has not committed yet, and
// nothing tells it from an unknown one. Bound ctx; WorkflowStatusOf (or
// Client.Get) says ErrNotFound for an id with no run at once.
func GetHandle[O any](a Runs, id string) *Handle[O] { return &Handle[O]{ID: id, a: a} }

// Result waits for the run to finish and returns its output, or its error
// (errors.Is works on the error's code, e.g. ErrCancelled). On a handle
// from Start (or Run) a run no longer stored (deleted by retention) is
// ErrNotFound at once; on one from StartTx or GetHandle an id with no run
// is waited for until ctx ends (see GetHandle).
func (h *Handle[O]) Result(ctx context.Context) (O, error) {
	var zero O
	wf, err := h.a.workflows()
	if err != nil {
		return zero, err
	}
	result := wf.Result
	if h.started {
		result = wf.ResultOfExisting
	}
	x, err := result(ctx, h.ID)
	if err != nil {
		return zero, err
	}
	if x.Status != store.ExecCompleted {
		if len(x.Error) > 0 {
			return zero, errs.Decode(x.Error)
		}
		return zero, errs.New(errs.CodeCancelled, "workflow %s was %s", h.ID, x.Status)
	}
	var out O
	if len(x.Output) > 0 {
		if err := json.Unmarshal(x.Output, &out); err != nil {
			return zero, errs.Wrap(errs.CodeDecode, err, "workflow result")
		}
	}
	return out, nil
}

// RetryPolicy says how a failing step is retried. The zero value is the
// default: 3 attempts, backoff from 100 ms doubling to 5 s.
type RetryPolicy struct {
	// MaxAttempts is how many times the step's function runs before its
	// error becomes the step's result (default 3; 1 means no retry).
	MaxAttempts int
	// Backoff is the delay before attempt n+1 after attempt n failed
	// (default 100 ms doubling, at most 5 s).
	Backoff func(attempt int) time.Duration
	// NonRetryable reports errors that fail the step at once (see also the
	// NonRetryable option).
	NonRetryable func(error) bool
}

func (p RetryPolicy) internal() workflow.RetryPolicy {
	return workflow.RetryPolicy{MaxAttempts: p.MaxAttempts, Backoff: p.Backoff, NonRetryable: p.NonRetryable}
}

// StepOption tunes a step (WithRetry, NonRetryable).
type StepOption func(*RetryPolicy)

// WithRetry sets the step's retry policy.
func WithRetry(p RetryPolicy) StepOption { return func(r *RetryPolicy) { *r = p } }

// NonRetryable makes errors matching any of targets (errors.Is) fail the
// step at once.
func NonRetryable(targets ...error) StepOption {
	return func(r *RetryPolicy) {
		r.NonRetryable = func(err error) bool {
			for _, t := range targets {
				if errors.Is(err, t) {
					return true
				}
			}
			return false
		}
	}
}

// Step runs fn at most once per run as far as the journal can see: its
// result is journaled and replays return it without running fn. If the
// process dies before the result is journaled, fn runs again on resume, so
// make its external effects idempotent.
func Step[T any](wc *WorkflowContext, name string, fn func(ctx context.Context) (T, error), opts ...StepOption) (T, error) {
	var p RetryPolicy
	for _, f := range opts {
		f(&p)
	}
	var zero T
	out, err := wc.c.Step(name, func(ctx context.Context) ([]byte, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	}, p.internal())
	if err != nil {
		return zero, err
	}
	var v T
	if err := json.Unmarshal(out, &v); err != nil {
		return zero, errs.Wrap(errs.CodeDecode, err, "step "+name+": cannot decode journaled result")
	}
	return v, nil
}

// AwaitSignal suspends the run until the named signal arrives and returns
// its payload. With timeout > 0 it gives up after that long with an error
// matching ErrDeadline.
func AwaitSignal[T any](wc *WorkflowContext, name string, timeout time.Duration) (T, error) {
	var zero T
	b, err := wc.c.AwaitSignal(name, timeout)
	if err != nil {
		return zero, err
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return zero, errs.Wrap(errs.CodeDecode, err, "signal "+name+": cannot decode payload")
	}
	return v, nil
}

// ChildOption tunes a child run (ParentClose).
type ChildOption func(*childOptions)

// childOptions is what the child options set.
type childOptions struct{ workflow.ChildOptions }

// ParentClose sets what happens to the child when the parent finishes
// first: ParentCloseTerminate (the default), ParentCloseRequestCancel or
// ParentCloseAbandon.
func ParentClose(policy ParentClosePolicy) ChildOption {
	return func(o *childOptions) { o.ParentClose = string(policy) }
}

// ExecuteChild starts w as a child of the current run (once) and suspends
// until it finishes, returning its result.
func ExecuteChild[I, O any](wc *WorkflowContext, w *Workflow[I, O], in I, opts ...ChildOption) (O, error) {
	var zero O
	var o childOptions
	for _, f := range opts {
		f(&o)
	}
	switch o.ParentClose {
	case "", workflow.ParentCloseTerminate, workflow.ParentCloseRequestCancel, workflow.ParentCloseAbandon:
	default:
		return zero, errs.New(errs.CodeInvalidArgument, "parent-close policy %q: use terminate, request-cancel or abandon", o.ParentClose)
	}
	input, err := json.Marshal(in)
	if err != nil {
		return zero, errs.Wrap(errs.CodeInvalidArgument, err, "child input")
	}
	out, err := wc.c.ExecuteChild(w.name, input, o.ChildOptions)
	if err != nil {
		return zero, err
	}
	var v O
	if err := json.Unmarshal(out, &v); err != nil {
		return zero, errs.Wrap(errs.CodeDecode, err, "child result")
	}
	return v, nil
}

// WorkflowStatus is a run as seen from outside.
type WorkflowStatus struct {
	ID     string    `json:"id"`
	Name   string    `json:"name"`
	Status RunStatus `json:"status"`
	// WaitingOn is Waiting as text for people ("signal \"go\" (operation
	// 2)").
	//
	// Deprecated: use Waiting; Waiting.String() is this text.
	WaitingOn   string          `json:"waitingOn,omitempty"`
	Waiting     *Waiting        `json:"waiting,omitempty"` // what a suspended run waits on; nil unless suspended
	Input       json.RawMessage `json:"input,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
	Error       *Error          `json:"error,omitempty"`
	ParentID    string          `json:"parentId,omitempty"`
	Runner      string          `json:"runner,omitempty"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
	FinishedAt  *time.Time      `json:"finishedAt,omitempty"`
	CancelAsked bool            `json:"cancelRequested,omitempty"`
	// Queue is the queue the run was started on (OnQueue), Partition and
	// Priority its place there; DequeuedAt when it got its slot.
	Queue      string     `json:"queue,omitempty"`
	Partition  string     `json:"partition,omitempty"`
	Priority   int        `json:"priority,omitempty"`
	StartAt    *time.Time `json:"startAt,omitempty"`
	DequeuedAt *time.Time `json:"dequeuedAt,omitempty"`
}

// StatusOf converts a stored run.
func statusOf(x store.Execution) WorkflowStatus {
	s := WorkflowStatus{ID: x.ID, Name: x.Name, Status: RunStatus(x.Status), WaitingOn: x.WaitingOn, ParentID: x.ParentID, Runner: x.Runner, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt, CancelAsked: x.CancelRequested, Waiting: waitingOf(x)}
	if json.Valid(x.Input) {
		s.Input = x.Input
	}
	if json.Valid(x.Output) {
		s.Output = x.Output
	}
	if len(x.Error) > 0 {
		s.Error = mirrorOf(errs.Decode(x.Error))
	}
	if !x.FinishedAt.IsZero() {
		t := x.FinishedAt
		s.FinishedAt = &t
	}
	s.Queue, s.Partition, s.Priority = x.Queue, x.Partition, x.Priority
	if !x.StartAt.IsZero() {
		t := x.StartAt
		s.StartAt = &t
	}
	if !x.DequeuedAt.IsZero() {
		t := x.DequeuedAt
		s.DequeuedAt = &t
	}
	return s
}

// ExecutionID is the id of the run that workflow name started with key.
func ExecutionID(name, key string) string { return workflow.ExecutionID(name, key) }
