package storetest

// The one entry point: Exercise runs every group of the contract on the
// stores a factory makes. A driver's test calls it once per configuration
// (a dialect, a topology); nothing else of this package needs calling for
// the contract to be covered, so a group added here reaches every driver.

import (
	"database/sql"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// Factory returns a migrated store with no rows, on a database of its own
// (each call a new one: some cases hold two at once), whose clock is now
// (the store's Clock option: memory.WithClock, sqlite/postgres/mysql
// Options.Clock). The suite passes a Clock of its own to every store; a
// nil now is the store's own clock.
type Factory func(t *testing.T, now func() time.Time) store.Driver

// Options tune the suite to a store.
type Options struct {
	// Reopen returns a second handle on d's database (a second process, in
	// effect; on Galera, another node) on the clock now. Nil for memory,
	// where the same *Store is shared.
	Reopen func(t *testing.T, d store.Driver, now func() time.Time) store.Driver
	// Parallel runs the Cluster and Messages cases in parallel: each has a
	// database of its own, and Reopen finds it from d, not from the last
	// Factory call.
	Parallel bool
	// Modes lists the lock modes to exercise (resolved modes only; default
	// row and advisory).
	Modes []store.LockMode
	// Tx opens the application's own pools for the transactional cases of
	// a store with Capabilities.Tx (required there).
	Tx TxOptions
}

// TxOptions tune the transactional cases to a store.
type TxOptions struct {
	// Pool opens the application's own pool (not the store's) on the
	// database of d, the one a factory call returned.
	Pool func(t *testing.T, d store.Driver) *sql.DB
	// Bare opens a pool on a database of the same kind without voltro's
	// tables.
	Bare func(t *testing.T) *sql.DB
	// Levels are the isolation levels to commit and roll back under
	// (sql.LevelDefault when empty).
	Levels []sql.IsolationLevel
	// AwaitSeesRollback: the store's AwaitCommit answers false as soon as
	// the transaction rolls back (not only after giving up).
	AwaitSeesRollback bool
}

// Exercise runs the whole conformance suite: every group of store.Driver,
// and every capability the stores report (a capability a store lacks is
// skipped with a message naming it).
func Exercise(t *testing.T, factory Factory, opts Options) {
	if len(opts.Modes) == 0 {
		opts.Modes = []store.LockMode{store.LockRow, store.LockAdvisory}
	}
	t.Run("Cluster+Messages", func(t *testing.T) { runCore(t, factory, opts) })
	t.Run("AcquireMany", func(t *testing.T) { runAcquireMany(t, factory, opts) })
	t.Run("Workflows", func(t *testing.T) { runWorkflows(t, factory) })
	t.Run("Schedules", func(t *testing.T) { runSchedules(t, factory, opts) })
	t.Run("Queues", func(t *testing.T) { runQueues(t, factory) })
	t.Run("Retention", func(t *testing.T) { runRetention(t, factory) })
	t.Run("Overview", func(t *testing.T) { runOverview(t, factory) })
	t.Run("Backlog", func(t *testing.T) { runBacklog(t, factory) })
	t.Run("Tx", func(t *testing.T) { runTx(t, factory, opts.Tx) })
	t.Run("Bench", func(t *testing.T) { runBench(t, factory) })
}
