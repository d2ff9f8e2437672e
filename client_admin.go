package voltro

// What a client tells an operator's tool (the CLI, an admin page) about
// runs beyond their status: whether a start by name would reach an
// instance, what a cancel did, and a run's journal step by step.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/voltro/voltro/internal/workflow"
)

// WithSource records where the start came from (StartInfo.Source); the
// default is SourceAPI. A tool of yours that starts runs for people, as
// voltro workflows start does, may say SourceCLI.
func WithSource(s StartSource) StartOption {
	return func(o *startOptions) { o.Source = string(s) }
}

// RequireHost makes a start refuse, before anything is written, a workflow
// that no live instance hosts (a typo, or a workflow a deploy removed:
// its run would wait for ever), naming those that are hosted, and an input
// that does not fit the input schema the hosts publish (a wrong JSON type,
// a number that does not fit; unknown fields pass, as in encoding/json).
// The first error matches ErrUnregistered, the second ErrInvalidArgument.
// Where hosting cannot be judged (SQLite, or runner storage memory: no
// table of live instances) nothing is refused. voltro workflows start
// does this unless --force.
func RequireHost() StartOption { return func(o *startOptions) { o.requireHost = true } }

// checkHost is RequireHost's check of a start of name with input.
func checkHost(ctx context.Context, wf *workflow.Engine, name string, input []byte, opts []StartOption) error {
	var o startOptions
	for _, f := range opts {
		f(&o)
	}
	if !o.requireHost {
		return nil
	}
	h, err := wf.Hosting(ctx, name)
	if err != nil {
		return err
	}
	if h.Judged && len(h.Hosts) == 0 {
		return workflow.NotHostedError(name, h)
	}
	return h.CheckInput(name, input)
}

// CancelOutcome is what CancelRun did.
type CancelOutcome struct {
	// Requested: a live instance hosts the run's workflow (or that cannot
	// be judged); the run stops at its next replay.
	Requested bool
	// Finished: no live instance hosts it, so the run was finished as
	// cancelled at once, and DeadLettered of its pending messages were
	// dead-lettered (replayable), in one transaction.
	Finished     bool
	DeadLettered int
	// Status is the run's status when it had finished already (neither of
	// the above happened).
	Status RunStatus
}

// JournalKind is what one journal entry records.
type JournalKind string

// Journal entry kinds.
const (
	JournalStep   JournalKind = "step"   // a Step's result or error
	JournalSleep  JournalKind = "sleep"  // a finished Sleep
	JournalSignal JournalKind = "signal" // a signal received (or its timeout)
	JournalChild  JournalKind = "child"  // a child run's result or error
	JournalPatch  JournalKind = "patch"  // a Patched marker: the run took the new branch
)

// JournalEntry is one operation of a run as its journal recorded it.
type JournalEntry struct {
	Seq        int
	Kind       JournalKind
	Name       string
	Attempts   int             // how many times a step's function ran
	Runner     string          // the instance that recorded it
	Result     json.RawMessage // the result as JSON; nil with Error
	Error      *Error          // the operation failed for good
	FinishedAt time.Time
	// Tries are a step's attempts, one per run of its function, where the
	// store records them (every SQL store): failed tries included.
	Tries []StepTry
}

// StepTry is one run of a step's function.
type StepTry struct {
	Attempt   int
	Status    TryStatus
	Runner    string // the instance that ran it
	ReplicaID string // that instance's POD_NAME
	Error     string
}

// TryStatus is how one run of a step's function went (StepTry.Status).
type TryStatus string

// Try statuses.
const (
	TryRunning   TryStatus = "running"   // the function is running (or its instance died running it)
	TryCompleted TryStatus = "completed" // it returned the step's result
	TryFailed    TryStatus = "failed"    // it failed for good: the step's error
	TryRetrying  TryStatus = "retrying"  // it failed and the step's retry policy runs it again
)
