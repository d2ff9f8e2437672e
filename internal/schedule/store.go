// What the scheduler needs of the store, and the records that cross it.
// The storage contract is the store's (store.Schedules, with its
// conformance suite in storetest); the names here are the scheduler's for
// the same records.

package schedule

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// Store is the scheduler's store: its dialect (which decides the default
// coordination), its clock (the cut-offs of overlap checks and garbage
// collection are instants on it) and the schedule tables. Every store of
// this repository (memory, SQLite, PostgreSQL, MariaDB/MySQL) is one; the
// versioned migrations of the SQL stores create the tables.
type Store interface {
	Dialect() store.Dialect
	Now(ctx context.Context) (time.Time, error)
	store.Schedules
}

type (
	// Claim is one replica's bid for one tick.
	Claim = store.ScheduleClaim
	// Run is one row of _voltro_schedule_runs: one replica's decision about
	// one tick, and the run of the function if it ran there.
	Run = store.ScheduleRun
	// Definition is one row of _voltro_schedules: a schedule as last
	// registered.
	Definition = store.ScheduleDefinition
	// Activity counts a schedule's live runs across replicas.
	Activity = store.ScheduleActivity
	// Summary is a schedule's history, for listings.
	Summary = store.ScheduleSummary
)

// ClaimKey is the key of the claim for schedule at tick at, name@unixSecond:
// the same string on every replica, and a new one for every tick, so a
// claim never has to be released.
func ClaimKey(schedule string, at time.Time) string { return store.ScheduleClaimKey(schedule, at) }
