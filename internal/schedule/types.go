// Enumerations of the schedule options and record fields, and their parsers.

package schedule

import (
	"strings"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// Coordination says how the replicas of an app agree on who fires a tick.
type Coordination = store.ScheduleCoordination

const (
	// CoordinationDefault takes the app-wide default.
	CoordinationDefault Coordination = ""
	// Single fires on every replica that runs the schedule: dev, one instance.
	Single Coordination = "single"
	// AdvisoryLock fires on the replica that inserts the tick's claim row first.
	AdvisoryLock Coordination = "advisoryLock"
	// Cluster lets the workflow engine fire the tick on the owner of the
	// schedule's shard.
	Cluster Coordination = "cluster"
)

// Overlap says what a tick does while an earlier run of its schedule is
// still running on any replica.
type Overlap = store.ScheduleOverlap

const (
	// OverlapDefault is OverlapSkip.
	OverlapDefault Overlap = ""
	// OverlapSkip drops the tick (recorded as skippedOverlap).
	OverlapSkip Overlap = "skip"
	// OverlapQueue runs the tick once the running one finishes; at most one
	// tick waits, later ones are skipped.
	OverlapQueue Overlap = "queue"
	// OverlapParallel runs every tick regardless.
	OverlapParallel Overlap = "parallel"
)

// Outcome is the coordination outcome recorded for a tick on a replica.
type Outcome = store.ScheduleOutcome

const (
	OutcomeSingle         = store.ScheduleOutcomeSingle         // fired, no coordination
	OutcomeWonLock        = store.ScheduleOutcomeWonLock        // fired, this replica's claim won
	OutcomeLostLock       = store.ScheduleOutcomeLostLock       // not fired here, another replica claimed it
	OutcomeCluster        = store.ScheduleOutcomeCluster        // fired by the workflow engine on the shard owner
	OutcomeSkippedOverlap = store.ScheduleOutcomeSkippedOverlap // not fired, an earlier run was still going
	OutcomeQueued         = store.ScheduleOutcomeQueued         // fired after the earlier run finished
	OutcomeMissed         = store.ScheduleOutcomeMissed         // not fired, nobody was there in time and catch-up is off
)

// Outcomes lists every outcome in display order.
var Outcomes = []Outcome{OutcomeSingle, OutcomeWonLock, OutcomeLostLock, OutcomeCluster, OutcomeSkippedOverlap, OutcomeQueued, OutcomeMissed}

// Status is the lifecycle state of a run row; Live reports whether a run
// in it still holds its schedule.
type Status = store.ScheduleStatus

const (
	StatusQueued    = store.ScheduleQueued    // waiting for the earlier run to finish
	StatusRunning   = store.ScheduleRunning   // the function is running
	StatusSucceeded = store.ScheduleSucceeded // the function returned nil
	StatusFailed    = store.ScheduleFailed    // the function returned an error or panicked
	StatusSkipped   = store.ScheduleSkipped   // the function did not run here (lostLock, skippedOverlap, missed)
	StatusCancelled = store.ScheduleCancelled // a queued run whose replica shut down before it started
	StatusAbandoned = store.ScheduleAbandoned // its replica stopped heart-beating while it was running or queued
)

// ParseCoordination reads a coordination name, case-insensitively. The empty
// string is CoordinationDefault. Anything else fails with CodeInvalidConfig.
func ParseCoordination(s string) (Coordination, error) {
	return parseEnum(s, "schedule coordination", []Coordination{Single, AdvisoryLock, Cluster})
}

// ParseOverlap reads an overlap policy name, case-insensitively. The empty
// string is OverlapDefault. Anything else fails with CodeInvalidConfig.
func ParseOverlap(s string) (Overlap, error) {
	return parseEnum(s, "schedule overlap", []Overlap{OverlapSkip, OverlapQueue, OverlapParallel})
}

// EnvCoordination is the environment variable that overrides the app-wide
// default coordination.
const EnvCoordination = "VOLTRO_SCHEDULE_COORDINATION"

func parseEnum[T ~string](s, what string, allowed []T) (T, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	for _, a := range allowed {
		if strings.EqualFold(s, string(a)) {
			return a, nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return "", errs.New(errs.CodeInvalidConfig, "unknown %s %q (want one of %s)", what, s, strings.Join(names, ", "))
}
