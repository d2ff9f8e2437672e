package voltro

// What a suspended run waits on, typed: the kind of wait, the signal or the
// child it names, and when its timer is due, so code need not parse the
// text written for people (Waiting.String).

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/workflow"
)

// WaitKind is what a suspended run waits on (Waiting.Kind).
type WaitKind string

// Wait kinds.
const (
	WaitSleep  WaitKind = "sleep"  // a durable Sleep
	WaitSignal WaitKind = "signal" // a signal, named by Waiting.Name
	WaitChild  WaitKind = "child"  // a child run, whose execution id is Waiting.Name
)

// Waiting is what a suspended run waits on (WorkflowStatus.Waiting).
type Waiting struct {
	Kind WaitKind `json:"kind"`
	// Name is the signal's name (WaitSignal) or the child's execution id
	// (WaitChild); empty for a sleep.
	Name string `json:"name,omitempty"`
	// Operation is the waiting operation's place in the run's journal
	// (JournalEntry.Seq once it is recorded).
	Operation int `json:"operation"`
	// Sleep is a sleep's duration; zero for other kinds.
	Sleep time.Duration `json:"sleep,omitempty"`
	// Until is when the wait's timer is due by the store's clock: a sleep's
	// end, a signal's timeout. It is zero when no timer is pending (a signal
	// awaited without a timeout, a child) and in the runs Client.List
	// returns (App.WorkflowStatusOf and Client.Get read it).
	Until time.Time `json:"until,omitzero"`
}

// String is the wait as text for people: `signal "go" (operation 2)`,
// `sleep 1h0m0s (operation 1)`, `child wf_… (operation 3)`; "" for nil (a
// run that is not suspended).
func (w *Waiting) String() string {
	if w == nil {
		return ""
	}
	return workflow.Waiting{Kind: store.JournalKind(w.Kind), Name: w.Name, Seq: w.Operation, Sleep: w.Sleep}.String()
}

// waitingOf types a stored run's WaitingOn; nil unless the run is
// suspended on something the engine wrote.
func waitingOf(x store.Execution) *Waiting {
	if x.Status != store.ExecSuspended {
		return nil
	}
	w, ok := workflow.ParseWaiting(x.WaitingOn)
	if !ok {
		return nil
	}
	return &Waiting{Kind: WaitKind(w.Kind), Name: w.Name, Operation: w.Seq, Sleep: w.Sleep}
}

// withUntil fills s.Waiting.Until from the pending timer of the operation
// the run waits on, where it has one.
func withUntil(ctx context.Context, wf *workflow.Engine, x store.Execution, s WorkflowStatus) (WorkflowStatus, error) {
	if s.Waiting == nil || s.Waiting.Kind == WaitChild {
		return s, nil
	}
	at, ok, err := wf.WakeAt(ctx, x, s.Waiting.Operation)
	if err != nil || !ok {
		return s, err
	}
	s.Waiting.Until = at
	return s, nil
}
