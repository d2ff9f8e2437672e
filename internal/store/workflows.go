package store

import (
	"context"
	"time"
)

// ExecStatus is a workflow execution's state.
type ExecStatus string

const (
	ExecRunning   ExecStatus = "running"   // runnable: started or resumed, not waiting
	ExecSuspended ExecStatus = "suspended" // waiting on a timer, a signal or a child; unloaded
	ExecCompleted ExecStatus = "completed"
	ExecFailed    ExecStatus = "failed"
	ExecCancelled ExecStatus = "cancelled"
)

// Terminal reports whether s is final.
func (s ExecStatus) Terminal() bool {
	return s == ExecCompleted || s == ExecFailed || s == ExecCancelled
}

// Execution is one workflow run.
type Execution struct {
	ID              string
	Name            string
	Shard           string
	Key             string // idempotency key, "" if none
	Status          ExecStatus
	Input           []byte
	Output          []byte
	Error           []byte // errs.Encode of the failure
	ParentID        string
	ParentClose     string // terminate | request-cancel | abandon
	CancelRequested bool
	WaitingOn       string // what a suspended run waits for ("sleep 3", "signal approve", "child 2")
	Runner          string // last runner that ran it
	// Queue is the queue the run was started on ("" for none); Partition
	// its partition key there, Priority its priority (lower first). A
	// queued run is dequeued no earlier than StartAt (zero: at once), and
	// DequeuedAt says when it got its slot. See Queues.
	Queue      string
	Partition  string
	Priority   int
	StartAt    time.Time
	DequeuedAt time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time
}

// StartContext is the durable context a run starts with, loaded by
// whichever runner executes it first.
type StartContext struct {
	ExecutionID string
	Subject     string // who started it
	Trace       string // W3C traceparent
	Source      string // api, cli, schedule, child …
	ParentID    string
	ParentClose string
}

// JournalKind is what one journal entry records.
type JournalKind string

const (
	JournalStep   JournalKind = "step"
	JournalSleep  JournalKind = "sleep"
	JournalSignal JournalKind = "signal"
	JournalChild  JournalKind = "child"
	JournalPatch  JournalKind = "patch"  // a change marker: the run took the patched branch
	JournalSelect JournalKind = "select" // which of several futures a Select returned
)

// Lazy reports whether entries of kind k are written only by the replay
// that makes them, so the runner may hold one back and write it with its
// next write: a step's outcome, a patch marker, a select's choice.
func (k JournalKind) Lazy() bool {
	return k == JournalStep || k == JournalPatch || k == JournalSelect
}

// JournalEntry is one completed operation of a run, by sequence number.
type JournalEntry struct {
	ExecutionID string
	Seq         int
	Kind        JournalKind
	Name        string
	Result      []byte
	Error       []byte // errs.Encode; the operation failed for good
	Attempts    int
	Runner      string
	StartedAt   time.Time
	FinishedAt  time.Time
}

// ExecutionUpdate changes a run's state, fenced by its shard's epoch.
type ExecutionUpdate struct {
	ID        string
	Shard     string
	Fence     Fence
	Status    ExecStatus
	Output    []byte
	Error     []byte
	WaitingOn string
	Runner    string
}

// ExecutionFilter selects runs for listings.
type ExecutionFilter struct {
	Status   ExecStatus
	Name     string
	ParentID string
	Queue    string // runs started on this queue ("" any)
	// Since and Until bound CreatedAt: at or after Since, before Until (a
	// zero time is no bound).
	Since, Until time.Time
	// After continues a listing past the last run of the previous page
	// (keyset pagination: the cost of a page does not grow with its depth).
	// nil starts at the newest run.
	After *ExecutionCursor
	Limit int
}

// ExecutionCursor names a run's place in a listing: its CreatedAt and ID,
// as a listing returned them. The runs after it are those the listing
// orders after it (older, or as old and after it by the store's
// tie-break); a cursor naming a run since deleted still works.
type ExecutionCursor struct {
	CreatedAt time.Time
	ID        string
}

// CursorOf is the cursor that continues a listing after x.
func CursorOf(x Execution) *ExecutionCursor {
	return &ExecutionCursor{CreatedAt: x.CreatedAt, ID: x.ID}
}

// Signal is a named message to a run; the first one of a name wins.
type Signal struct {
	ExecutionID string
	Name        string
	Payload     []byte
	CreatedAt   time.Time
}

// StartRequest is one start of a batch: StartExecution's arguments.
type StartRequest struct {
	Exec    Execution
	Context StartContext
	Message *Message
	Claim   *EnqueueClaim
}

// StartOutcome is StartExecution's result for one StartRequest.
type StartOutcome struct {
	Stored   Execution
	Existing bool
	Result   EnqueueResult
	Err      error
}

// BatchStarter is implemented by stores that write many starts in one
// transaction, each with StartExecution's semantics and its own outcome
// (Message is updated in place as StartExecution does). An error means the
// batch as a whole was not written; the caller may retry the starts one by
// one.
type BatchStarter interface {
	StartExecutions(ctx context.Context, reqs []StartRequest) ([]StartOutcome, error)
}

// Workflows is the group of durable workflow runs: the run rows, their
// start contexts, journals and signals, fenced run writes, and reopening a
// finished run (Reopener).
type Workflows interface {
	Reopener
	// StartExecution inserts x (and its start context) and enqueues start,
	// atomically. If an execution with x.ID exists, nothing is written and
	// existing=true with the stored row. claim works as in Enqueue.
	StartExecution(ctx context.Context, x Execution, sc StartContext, start *Message, claim *EnqueueClaim) (stored Execution, existing bool, res EnqueueResult, err error)
	GetExecution(ctx context.Context, id string) (Execution, error)
	// PollExecutions reads many runs in one round trip, for callers
	// waiting on their ends: the runs of ids that exist, each once, in no
	// particular order (an id without a run is left out). A run that has
	// not finished comes without its Input, which its waiters do not
	// need and would read again and again.
	PollExecutions(ctx context.Context, ids []string) ([]Execution, error)
	GetStartContext(ctx context.Context, id string) (StartContext, error)
	// ListExecutions returns runs newest first.
	ListExecutions(ctx context.Context, f ExecutionFilter) ([]Execution, error)
	// Journal returns a run's entries ordered by Seq.
	Journal(ctx context.Context, id string) ([]JournalEntry, error)
	// RunWriter writes journal entries and state changes, fenced, in
	// batches (see AppendJournal and UpdateExecution for one at a time).
	RunWriter
	// SendSignal stores the signal if none of that name exists yet and
	// enqueues wake, in one transaction; stored=false when the name existed
	// (then nothing is enqueued). errs.ErrNotFound for an unknown run.
	SendSignal(ctx context.Context, s Signal, wake *Message) (stored bool, err error)
	GetSignal(ctx context.Context, executionID, name string) (*Signal, error)
	// ListSignals returns every signal stored for a run, received or not,
	// oldest first (then by name); none for an unknown run.
	ListSignals(ctx context.Context, executionID string) ([]Signal, error)
	// RequestCancel marks the run cancel-requested and enqueues wake, in one
	// transaction; false when the run is already terminal.
	RequestCancel(ctx context.Context, id string, wake *Message) (bool, error)
}

// RunRecord is a row of _voltro_workflow_runs (introspection only).
type RunRecord struct {
	ExecutionID string
	Name        string
	Status      ExecStatus
	ReplicaID   string
	Runner      string
	ParentID    string
	Error       string
	StartedAt   time.Time
	UpdatedAt   time.Time
	FinishedAt  time.Time
}

// StepRecord is a row of _voltro_workflow_run_steps: one attempt of a step.
type StepRecord struct {
	ExecutionID string
	Seq         int
	Name        string
	Kind        JournalKind
	Attempt     int
	Status      string // running | completed | failed | retrying
	Runner      string
	ReplicaID   string
	Error       string
	StartedAt   time.Time
	FinishedAt  time.Time
	Trace       string
}

// EventRecord is a row of _voltro_workflow_run_events.
type EventRecord struct {
	ExecutionID string
	At          time.Time
	Kind        string // started, resumed, suspended, signal, completed, failed, cancelled, replay, …
	Detail      string
	ReplicaID   string
	Runner      string
}

// IntrospectionBatch is what the background writer flushes at once.
type IntrospectionBatch struct {
	Runs   []RunRecord
	Steps  []StepRecord
	Events []EventRecord
}

// Len is the number of records in the batch.
func (b IntrospectionBatch) Len() int { return len(b.Runs) + len(b.Steps) + len(b.Events) }

// Introspection writes and reads the introspection tables. Writes
// are fire-and-forget: the engine never reads them for correctness.
type Introspection interface {
	// Record writes a batch in one transaction: runs upserted by execution
	// id (a zero StartedAt keeps the stored one), steps upserted by
	// (execution, seq, attempt), events appended (a zero At is now). Later
	// records of a key in the batch win over earlier ones.
	Record(ctx context.Context, b IntrospectionBatch) error
	RunSteps(ctx context.Context, executionID string) ([]StepRecord, error)   // by seq, attempt
	RunEvents(ctx context.Context, executionID string) ([]EventRecord, error) // by time
}
