package voltro

// Typed states users compare against: a run's status, and the readiness
// verdict with the kinds of problem it names.

import (
	"context"

	"github.com/voltro/voltro/internal/store"
)

// RunStatus is the state of a workflow run (WorkflowStatus.Status).
type RunStatus string

// Run statuses.
const (
	StatusQueued    RunStatus = "queued"    // on a queue, waiting for its slot (OnQueue)
	StatusRunning   RunStatus = "running"   // started or resumed, not waiting
	StatusSuspended RunStatus = "suspended" // waiting on a sleep, a signal or a child (WorkflowStatus.Waiting says which)
	StatusCompleted RunStatus = "completed" // finished with an output
	StatusFailed    RunStatus = "failed"    // finished with an error
	StatusCancelled RunStatus = "cancelled" // cancelled before it finished
)

// Terminal reports whether the run has finished (completed, failed or
// cancelled) and will not change again.
func (s RunStatus) Terminal() bool { return store.ExecStatus(s).Terminal() }

// Health is this instance's readiness verdict with its evidence (App.Health;
// the same verdict GET /_voltro/health/ready on the inspect address serves).
// It encodes to JSON as {"ready": …, "problems": [{"kind": …, "detail": …}]}.
type Health struct {
	Ready    bool      `json:"ready"`    // false while any problem stands
	Problems []Problem `json:"problems"` // why it is not ready; empty when it is
}

// Problem is one reason an instance is not ready.
type Problem struct {
	Kind   ProblemKind `json:"kind"`
	Detail string      `json:"detail"` // for people; not stable
}

// ProblemKind names what is wrong.
type ProblemKind string

// Problem kinds.
const (
	ProblemDatabase     ProblemKind = "database"      // the database does not answer (ping, drain statistics)
	ProblemPool         ProblemKind = "pool"          // the connection pool has not served a query lately; shards released
	ProblemLocks        ProblemKind = "locks"         // the shard-lock storage is unhealthy
	ProblemIdentity     ProblemKind = "identity"      // the cluster refused this instance's identity
	ProblemReadLoop     ProblemKind = "read_loop"     // the delivery loop has stopped running
	ProblemStalledShard ProblemKind = "stalled_shard" // owned shards have deliverable messages nobody delivers
	ProblemUnacquired   ProblemKind = "unacquired"    // shards assigned to this instance could not be acquired
)

// Health evaluates readiness now.
func (a *App) Health(ctx context.Context) Health {
	h := a.e.Health(ctx)
	out := Health{Ready: h.Ready}
	for _, p := range h.Problems {
		out.Problems = append(out.Problems, Problem{Kind: ProblemKind(p.Kind), Detail: p.Detail})
	}
	return out
}
