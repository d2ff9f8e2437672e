package store

// Overviews: read-only counts over a whole database, for the tools that
// look at one from outside a runner (the shared-state footer of `voltro
// cluster status`, `voltro bench`). Nothing in the engine reads them.
// Cut-offs are the caller's, as absolute instants on the store's clock
// (Now minus a window), as in retention and schedules, so a test can read
// "as of" any instant without sleeping.

import (
	"context"
	"time"
)

// ReplicaRuns is how many schedule runs of one replica a count found.
type ReplicaRuns struct {
	ReplicaID string
	Runs      int
}

// LatestClaim is the newest claim of one schedule.
type LatestClaim struct {
	Schedule  string
	ReplicaID string
	ClaimedAt time.Time // the store's clock when the claim was made
}

// ScheduleOverview is schedule activity across replicas, as of a cut-off
// (Since).
type ScheduleOverview struct {
	// Active counts, per replica, the runs whose heartbeat or finish is
	// after Since.
	Active []ReplicaRuns
	// Running counts, per replica, the runs in status running, whatever
	// their heartbeat.
	Running []ReplicaRuns
	// RecentClaims counts the claims made after Since.
	RecentClaims int
	// Latest holds, per schedule, its newest claim; of claims made in the
	// same instant, the one of the lowest replica id.
	Latest []LatestClaim
}

// Overview is the group of read-only counts over the whole database.
// Lists are ordered by replica id, Latest by schedule name, and are empty
// (not nil) when nothing counts.
type Overview interface {
	// ScheduleOverview reads the schedule activity as of since. It
	// returns nil, and no error, when the database has no schedule tables
	// (one not migrated this far).
	ScheduleOverview(ctx context.Context, since time.Time) (*ScheduleOverview, error)
	// CountExecutions counts the workflow runs in each of statuses (a
	// status no run is in counts 0). It returns nil, and no error, when
	// the database has no workflow tables.
	CountExecutions(ctx context.Context, statuses ...ExecStatus) (map[ExecStatus]int, error)
}

// LatestClaims keeps, of claims ordered by schedule and then replica id,
// the newest per schedule (the first among equals), ordered by schedule:
// for stores whose query returns every claim made at a schedule's latest
// instant.
func LatestClaims(ordered []LatestClaim) []LatestClaim {
	out := []LatestClaim{}
	for _, c := range ordered {
		if n := len(out); n > 0 && out[n-1].Schedule == c.Schedule {
			continue // two claims in the same instant: keep one
		}
		out = append(out, c)
	}
	return out
}
