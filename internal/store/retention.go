package store

// Retention: deleting what is finished and old enough, a small batch at a
// time, so the tables stay bounded. The rules of what may go are the
// store's (every batch re-checks them in the statements that delete); the
// cut-offs are the caller's, as absolute instants on the store's clock
// (Now minus the retention), so a test can sweep "as of" any instant.

import (
	"context"
	"time"
)

// Tables a sweep reports on, by their names in the SQL stores (the memory
// store uses the same names).
const (
	TableExecutions    = "voltro_workflow_executions"
	TableJournal       = "voltro_workflow_journal"
	TableSignals       = "voltro_workflow_signals"
	TableStartContexts = "_voltro_workflow_start_contexts"
	TableRuns          = "_voltro_workflow_runs"
	TableRunSteps      = "_voltro_workflow_run_steps"
	TableRunEvents     = "_voltro_workflow_run_events"
	TableMessages      = "voltro_messages"
	TableReplies       = "voltro_replies"
	TableRunners       = "voltro_runners"
)

// Tables the dashboard's panels follow through the change feed where it
// can see them (besides the introspection tables).
const (
	TableShardLocks     = "voltro_shard_locks"
	TableSchedules      = "_voltro_schedules"
	TableScheduleRuns   = "_voltro_schedule_runs"
	TableScheduleClaims = "_voltro_schedule_claims"
)

// IntrospectionTables are the workflow introspection tables, public and
// stable: the change feed follows them (the dashboard's live runs, `voltro
// watch`) though it skips voltro's other tables.
var IntrospectionTables = []string{TableRuns, TableRunSteps, TableRunEvents}

// SweepTables lists the tables a sweep may delete from, in the order
// reports print them.
var SweepTables = []string{
	TableExecutions, TableJournal, TableSignals, TableStartContexts,
	TableRuns, TableRunSteps, TableRunEvents, TableMessages, TableReplies, TableRunners,
}

// RunStartKey is the dedupe key of the message that starts run id (the
// start message StartExecution enqueues). A sweep deletes that message
// with its run: left behind, it would make a later start of the same id
// (the same idempotency key, after the run was deleted) a duplicate
// message, and the new run would never be delivered.
func RunStartKey(id string) string { return "wf-start:" + id }

// SweepKind is what one sweep batch deletes.
type SweepKind string

const (
	// SweepRuns: finished runs (completed, failed, cancelled) whose
	// FinishedAt is before Before, each with every row that belongs to it:
	// journal, signals, start context, the _voltro_workflow_run* rows, and
	// its start message (RunStartKey) with its reply. A run is kept while
	//   - its parent is not finished (the parent may still start it again
	//     and must find it: a child's id is derived from its parent's);
	//   - its start message is pending or claimed, or a dead letter not
	//     older than DeadBefore (a dead letter outlives its retention).
	// The run's other messages (timers, signal and child wake-ups) are
	// plain messages with their own retention (SweepProcessed,
	// SweepDead); one still undelivered is kept and, when delivered,
	// finds no run and does nothing, as it would for a finished run.
	SweepRuns SweepKind = "runs"
	// SweepProcessed: processed messages whose ProcessedAt is before
	// Before, with their replies. A dedupe key repeated after that is a
	// new message.
	SweepProcessed SweepKind = "processed"
	// SweepDead: dead letters dead-lettered before Before, with their
	// replies.
	SweepDead SweepKind = "dead"
	// SweepRunners: runner rows whose last heartbeat is before Before and
	// that no shard lock row names as owner (a frozen owner is fenced, not
	// forgotten).
	SweepRunners SweepKind = "runners"
)

// SweepKinds lists every kind in the order a full pass sweeps them.
var SweepKinds = []SweepKind{SweepRuns, SweepProcessed, SweepDead, SweepRunners}

// DefaultSweepLimit is the batch size when a request names none.
const DefaultSweepLimit = 500

// SweepRequest asks for one batch of one kind.
type SweepRequest struct {
	Kind SweepKind
	// Before is the cut-off on the store's clock: rows of Kind older than
	// it may go. The zero time deletes nothing.
	Before time.Time
	// DeadBefore (SweepRuns only) is the dead-letter cut-off: a run whose
	// start message is a dead letter dead-lettered at or after it is kept.
	// The zero time keeps every run whose start message is dead.
	DeadBefore time.Time
	// Limit caps the rows of the kind's own table (runs, messages, runner
	// rows) in the batch; <= 0 is DefaultSweepLimit.
	Limit int
	// DryRun deletes nothing and counts what would go. Dry-run batches
	// walk the candidates in key order: pass the previous batch's Next as
	// After to go on.
	DryRun bool
	After  string
}

// SweepBatch is what one batch deleted (or, dry run, would delete).
type SweepBatch struct {
	// Rows counts rows per table (Table* names); tables with none are
	// absent.
	Rows map[string]int64
	// More: the batch was full, there may be more of the kind to sweep.
	More bool
	// Next is the dry-run cursor: the last candidate's key.
	Next string
}

// Add counts n rows of table in b.
func (b *SweepBatch) Add(table string, n int64) {
	if n == 0 {
		return
	}
	if b.Rows == nil {
		b.Rows = map[string]int64{}
	}
	b.Rows[table] += n
}

// Oldest is the oldest row a store keeps of each kind, zero when it keeps
// none.
type Oldest struct {
	Now time.Time // the store's clock when read
	// Run is the creation time of the oldest finished run.
	Run time.Time
	// Processed is the processing time of the oldest processed message.
	Processed time.Time
	// Dead is when the oldest dead letter was dead-lettered.
	Dead time.Time
}

// Retention is the group of history deletion (docs/retention.md).
type Retention interface {
	// Sweep deletes one batch of req.Kind in one transaction: a run goes
	// with all its rows or not at all, a message with its reply. Every
	// rule above is checked by the statements that delete, so concurrent
	// sweeps (two instances during a hand-over, a `voltro gc` beside the
	// background sweeper) only repeat each other's work.
	Sweep(ctx context.Context, req SweepRequest) (SweepBatch, error)
	// OldestKept reports the oldest row kept of each kind.
	OldestKept(ctx context.Context) (Oldest, error)
}

// BatchLimit is the batch size the request asks for.
func (r SweepRequest) BatchLimit() int {
	if r.Limit <= 0 {
		return DefaultSweepLimit
	}
	return r.Limit
}
