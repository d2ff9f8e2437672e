// The storage contract of the scheduler and the records that cross it.
package schedule

import (
	"context"
	"strconv"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// Store keeps the claims, run records and definitions of schedules. Times it
// stamps (claimedAt, started, finished, heartbeatAt) come from the store's
// own clock; scheduledAt always comes from the caller.
type Store interface {
	// Dialect tells the scheduler which coordination to default to.
	Dialect() store.Dialect
	// Init creates the tables if they are missing. Safe to call from several
	// processes at once.
	Init(ctx context.Context) error
	// Claim inserts the claim row c.Key(). It reports true for the one caller
	// whose insert created the row and false, with no error, for the others.
	Claim(ctx context.Context, c Claim) (bool, error)
	// Define upserts what a replica registered, for listings.
	Define(ctx context.Context, d Definition) error
	// Insert records a run and returns its id. Started is stamped unless the
	// status is queued; Finished is stamped when the status is not live.
	Insert(ctx context.Context, r Run) (int64, error)
	// Start moves a queued run to running; false if it was not queued.
	Start(ctx context.Context, id int64) (bool, error)
	// Finish ends a run with a final status and error text.
	Finish(ctx context.Context, id int64, status Status, errText string) error
	// Heartbeat refreshes every live run of a replica.
	Heartbeat(ctx context.Context, replicaID string) error
	// Active counts the live runs of a schedule, on any replica, whose
	// heartbeat is younger than stale.
	Active(ctx context.Context, schedule string, stale time.Duration) (Activity, error)
	// LastScheduledAt is the latest tick recorded for a schedule at or before
	// notAfter, by any replica.
	LastScheduledAt(ctx context.Context, schedule string, notAfter time.Time) (time.Time, bool, error)
	// Runs returns a schedule's runs, newest tick first.
	Runs(ctx context.Context, schedule string, limit int) ([]Run, error)
	// Summaries returns every schedule that is defined or has runs, by name.
	Summaries(ctx context.Context) ([]Summary, error)
	// GC deletes old claims and runs and abandons live runs whose replica
	// stopped heart-beating.
	GC(ctx context.Context, r Retention) (GCResult, error)
}

// Claim is one replica's bid for one tick.
type Claim struct {
	Schedule    string
	ScheduledAt time.Time
	ReplicaID   string
}

// Key is the claim's primary key, name@unixSecond.
func (c Claim) Key() string { return ClaimKey(c.Schedule, c.ScheduledAt) }

// ClaimKey is the key of the claim for schedule at tick at: the same string
// on every replica, and a new one for every tick, so a claim never has to be
// released.
func ClaimKey(schedule string, at time.Time) string {
	return schedule + "@" + strconv.FormatInt(at.Unix(), 10)
}

// Run is one row of _voltro_schedule_runs: one replica's decision about one
// tick, and the run of the function if it ran there.
type Run struct {
	ID          int64     `json:"id"`
	Schedule    string    `json:"schedule"`
	ScheduledAt time.Time `json:"scheduledAt"`
	ReplicaID   string    `json:"replicaId"`
	Outcome     Outcome   `json:"coordinationOutcome"`
	Status      Status    `json:"status"`
	Started     time.Time `json:"started,omitzero"`  // zero while queued
	Finished    time.Time `json:"finished,omitzero"` // zero while live
	Error       string    `json:"error,omitempty"`
}

// Definition is one row of _voltro_schedules: a schedule as last registered.
type Definition struct {
	Name         string       `json:"name"`
	Spec         string       `json:"spec"`
	TimeZone     string       `json:"timeZone"`
	Coordination Coordination `json:"coordination"` // as resolved, after defaults and degradation
	Overlap      Overlap      `json:"overlap"`
	CatchUp      bool         `json:"catchUp"`
	ReplicaID    string       `json:"replicaId"` // the replica that registered it last
	UpdatedAt    time.Time    `json:"updatedAt"`
}

// Activity counts a schedule's live runs across replicas.
type Activity struct {
	Running int
	Queued  int
}

// Summary is a schedule's history, for listings.
type Summary struct {
	Name       string
	Definition *Definition       // nil when no replica defined it (runs only)
	Last       *Run              // the latest tick's deciding row (not lostLock)
	Counts     map[Outcome]int64 // rows per outcome
}

// Retention says what GC removes.
type Retention struct {
	Claims time.Duration // claims claimed longer ago than this
	Runs   time.Duration // finished runs started longer ago than this
	Stale  time.Duration // live runs without a heartbeat for this long become abandoned
}

// GCResult counts what one GC pass did.
type GCResult struct {
	Claims, Runs, Abandoned int64
}
