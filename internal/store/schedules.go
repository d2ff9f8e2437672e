package store

// Schedules: the rows of the cron scheduler (internal/schedule). One claim
// per tick decides, under advisoryLock coordination, which replica fires
// it; one run row per tick per replica records what that replica decided
// and, if it ran the function, how the run went; one definition row per
// schedule keeps it as last registered, for listings. The tables are
// _voltro_schedule_claims, _voltro_schedule_runs and _voltro_schedules,
// created by each store's versioned migrations.
//
// Times the store stamps (claimedAt, started, finished, heartbeatAt,
// updatedAt) come from the store's clock. ScheduledAt always comes from
// the caller: every replica derives it from the cron expression, so it
// names a tick the same way everywhere. Cut-offs (a heartbeat too old to
// count, a claim or run old enough to delete) are the caller's, as
// absolute instants on the store's clock (Now minus a duration), as in
// retention, so a test can judge "as of" any instant without sleeping.

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"
)

// ScheduleStatus is the lifecycle state of a schedule run row.
type ScheduleStatus string

const (
	ScheduleQueued    ScheduleStatus = "queued"    // waiting for the earlier run to finish
	ScheduleRunning   ScheduleStatus = "running"   // the function is running
	ScheduleSucceeded ScheduleStatus = "succeeded" // the function returned nil
	ScheduleFailed    ScheduleStatus = "failed"    // the function returned an error or panicked
	ScheduleSkipped   ScheduleStatus = "skipped"   // the function did not run here (lostLock, skippedOverlap, missed)
	ScheduleCancelled ScheduleStatus = "cancelled" // a queued run whose replica shut down before it started
	ScheduleAbandoned ScheduleStatus = "abandoned" // its replica stopped heart-beating while it was running or queued
)

// Live reports whether a run in this state still holds its schedule
// (queued or running): heartbeats refresh it, overlap checks count it.
func (s ScheduleStatus) Live() bool { return s == ScheduleQueued || s == ScheduleRunning }

// ScheduleOutcome is the coordination outcome recorded for a tick on a
// replica.
type ScheduleOutcome string

const (
	ScheduleOutcomeSingle         ScheduleOutcome = "single"         // fired, no coordination
	ScheduleOutcomeWonLock        ScheduleOutcome = "wonLock"        // fired, this replica's claim won
	ScheduleOutcomeLostLock       ScheduleOutcome = "lostLock"       // not fired here, another replica claimed it
	ScheduleOutcomeCluster        ScheduleOutcome = "cluster"        // fired by the workflow engine on the shard owner
	ScheduleOutcomeSkippedOverlap ScheduleOutcome = "skippedOverlap" // not fired, an earlier run was still going
	ScheduleOutcomeQueued         ScheduleOutcome = "queued"         // fired after the earlier run finished
	ScheduleOutcomeMissed         ScheduleOutcome = "missed"         // not fired, nobody was there in time and catch-up is off
)

// ScheduleCoordination and ScheduleOverlap are a definition's options as
// the scheduler resolved them. The store keeps them as given; their
// values are internal/schedule's (Coordination, Overlap).
type (
	ScheduleCoordination string
	ScheduleOverlap      string
)

// ScheduleAbandonedError is the error text of a run CollectSchedules
// abandoned.
const ScheduleAbandonedError = "its replica stopped heart-beating"

// ScheduleClaim is one replica's bid for one tick.
type ScheduleClaim struct {
	Schedule    string
	ScheduledAt time.Time
	ReplicaID   string
}

// Key is the claim's primary key (ScheduleClaimKey).
func (c ScheduleClaim) Key() string { return ScheduleClaimKey(c.Schedule, c.ScheduledAt) }

// ScheduleClaimKey is the key of the claim for schedule at tick at,
// name@unixSecond: the same string on every replica, and a new one for
// every tick, so a claim never has to be released.
func ScheduleClaimKey(schedule string, at time.Time) string {
	return schedule + "@" + strconv.FormatInt(at.Unix(), 10)
}

// ScheduleRun is one row of _voltro_schedule_runs: one replica's decision
// about one tick, and the run of the function if it ran there. The JSON
// form is what `voltro schedules runs --format json` prints.
type ScheduleRun struct {
	ID          int64           `json:"id"`
	Schedule    string          `json:"schedule"`
	ScheduledAt time.Time       `json:"scheduledAt"`
	ReplicaID   string          `json:"replicaId"`
	Outcome     ScheduleOutcome `json:"coordinationOutcome"`
	Status      ScheduleStatus  `json:"status"`
	Started     time.Time       `json:"started,omitzero"`  // zero while queued
	Finished    time.Time       `json:"finished,omitzero"` // zero while live
	Error       string          `json:"error,omitempty"`
}

// ScheduleDefinition is one row of _voltro_schedules: a schedule as last
// registered.
type ScheduleDefinition struct {
	Name         string               `json:"name"`
	Spec         string               `json:"spec"`
	TimeZone     string               `json:"timeZone"`
	Coordination ScheduleCoordination `json:"coordination"` // as resolved, after defaults and degradation
	Overlap      ScheduleOverlap      `json:"overlap"`
	CatchUp      bool                 `json:"catchUp"`
	ReplicaID    string               `json:"replicaId"` // the replica that registered it last
	UpdatedAt    time.Time            `json:"updatedAt"`
}

// ScheduleActivity counts a schedule's live runs across replicas.
type ScheduleActivity struct {
	Running int
	Queued  int
}

// ScheduleSummary is a schedule's history, for listings.
type ScheduleSummary struct {
	Name       string
	Definition *ScheduleDefinition       // nil when no replica defined it (runs only)
	Last       *ScheduleRun              // the latest tick's deciding row (not lostLock)
	Counts     map[ScheduleOutcome]int64 // rows per outcome
}

// ScheduleGC says what CollectSchedules removes, by cut-offs on the
// store's clock. A zero cut-off removes nothing of its kind.
type ScheduleGC struct {
	ClaimsBefore time.Time // claims claimed before it are deleted
	RunsBefore   time.Time // finished (not live) runs that finished before it are deleted
	StaleBefore  time.Time // live runs whose heartbeat is before it become abandoned
}

// ScheduleGCResult counts what one CollectSchedules call did.
type ScheduleGCResult struct {
	Claims, Runs, Abandoned int64
}

// Schedules is the group of the claims, run records and definitions of
// schedules. Writes are single statements, safe from many replicas at
// once.
type Schedules interface {
	// ClaimScheduleTick inserts the claim row c.Key(), stamped with the
	// store's now. It reports true for the one caller, among every
	// replica, whose insert created the row, and false, with no error,
	// for the others.
	ClaimScheduleTick(ctx context.Context, c ScheduleClaim) (bool, error)
	// CountScheduleClaims counts the claims kept for schedule.
	CountScheduleClaims(ctx context.Context, schedule string) (int64, error)
	// DefineSchedule upserts d by name; UpdatedAt is the store's now.
	DefineSchedule(ctx context.Context, d ScheduleDefinition) error
	// InsertScheduleRun records r (its ID is ignored) and returns the new
	// row's id. Started is stamped unless the status is queued, Finished
	// when the status is not live, heartbeatAt always.
	InsertScheduleRun(ctx context.Context, r ScheduleRun) (int64, error)
	// StartScheduleRun moves a queued run to running, stamping started and
	// its heartbeat; false if it was not queued (or does not exist).
	StartScheduleRun(ctx context.Context, id int64) (bool, error)
	// FinishScheduleRun ends run id with status and error text ("" is
	// none), stamping finished. An unknown id changes nothing.
	FinishScheduleRun(ctx context.Context, id int64, status ScheduleStatus, errText string) error
	// HeartbeatScheduleRuns refreshes the heartbeat of every live run of a
	// replica.
	HeartbeatScheduleRuns(ctx context.Context, replicaID string) error
	// ActiveScheduleRuns counts the live runs of a schedule, on any
	// replica, whose heartbeat is after since.
	ActiveScheduleRuns(ctx context.Context, schedule string, since time.Time) (ScheduleActivity, error)
	// LastScheduledAt is the latest tick recorded for a schedule at or
	// before notAfter, by any replica; false when there is none.
	LastScheduledAt(ctx context.Context, schedule string, notAfter time.Time) (time.Time, bool, error)
	// ScheduleRuns returns a schedule's runs, newest tick first and, within
	// a tick, newest row first; limit <= 0 returns all of them.
	ScheduleRuns(ctx context.Context, schedule string, limit int) ([]ScheduleRun, error)
	// LatestScheduleRuns returns the newest perSchedule runs of every
	// schedule (in ScheduleRuns order), by schedule, in one read however
	// many schedules there are: a panel listing them all costs one query.
	LatestScheduleRuns(ctx context.Context, perSchedule int) (map[string][]ScheduleRun, error)
	// ScheduleSummaries returns every schedule that is defined or has
	// runs, by name. Claims alone make no schedule.
	ScheduleSummaries(ctx context.Context) ([]ScheduleSummary, error)
	// CollectSchedules deletes old claims, abandons the live runs of
	// replicas that stopped heart-beating (status abandoned, finished now,
	// error ScheduleAbandonedError) and then deletes old finished runs.
	// Every replica runs it; it is idempotent.
	CollectSchedules(ctx context.Context, gc ScheduleGC) (ScheduleGCResult, error)
}

// ScheduleSummaries gathers summaries by name, for the drivers'
// ScheduleSummaries.
type ScheduleSummaries map[string]*ScheduleSummary

// Get returns the summary of name, adding an empty one if there is none.
func (m ScheduleSummaries) Get(name string) *ScheduleSummary {
	s, ok := m[name]
	if !ok {
		s = &ScheduleSummary{Name: name, Counts: map[ScheduleOutcome]int64{}}
		m[name] = s
	}
	return s
}

// Sorted returns the summaries ordered by name.
func (m ScheduleSummaries) Sorted() []ScheduleSummary {
	out := make([]ScheduleSummary, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ScheduleSummary) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// BySchedule groups runs by schedule, keeping their order, for the
// drivers' LatestScheduleRuns.
func BySchedule(runs []ScheduleRun) map[string][]ScheduleRun {
	out := map[string][]ScheduleRun{}
	for _, r := range runs {
		out[r.Schedule] = append(out[r.Schedule], r)
	}
	return out
}
