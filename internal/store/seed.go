package store

// Seeding history for benchmarks: the rows a year of finished runs leaves,
// made in bulk instead of by running each one.

import (
	"context"
	"time"
)

// HistorySeed says what SeedHistory makes.
type HistorySeed struct {
	// N finished runs of workflow Name (three steps each), finished at times
	// spread evenly over [From, To).
	N        int
	Name     string
	From, To time.Time
	// Shards the runs are spread over, round robin (the ids do not hash to
	// them: finished runs are never routed again).
	Shards []string
	// Status is the runs' final status: ExecCompleted when empty, or
	// ExecFailed or ExecCancelled (the steps completed either way).
	Status ExecStatus
}

// FinalStatus is h.Status, ExecCompleted when empty.
func (h HistorySeed) FinalStatus() ExecStatus {
	if h.Status == "" {
		return ExecCompleted
	}
	return h.Status
}

// HistorySeeder is implemented by the SQL stores. SeedHistory inserts, with
// set-based statements in batches, the rows a finished 3-step run leaves in
// every table: the execution, three journal entries, the start context, the
// introspection run, three step attempts and two events, the processed
// start message and its reply. Ids follow the form of a run started
// without a key at its start time, so the seeded history sits in the
// indexes where a real one would. It is for `voltro bench`, never for
// production data.
type HistorySeeder interface {
	SeedHistory(ctx context.Context, h HistorySeed) error
}
