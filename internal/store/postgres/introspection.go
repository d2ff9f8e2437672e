// Workflow introspection: the _voltro_workflow_run* tables humans query to
// see what runs did, where and when. The engine writes them in the
// background, a batch at a time, and never reads them for correctness, so
// each batch commits asynchronously (no wait for its WAL flush).

package postgres

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store"
)

// sqlAsyncCommit turns off synchronous_commit for the batch's transaction
// only: the commit returns before its WAL is flushed. A crash may lose the
// last fraction of a second of introspection rows, never engine state, and
// the writes stop competing with the engine's commits for WAL flushes.
const sqlAsyncCommit = `SELECT set_config('synchronous_commit', 'off', true)`

// sqlRecordRuns upserts runs, one array element each; a NULL startedAt
// keeps the stored one.
const sqlRecordRuns = `INSERT INTO _voltro_workflow_runs AS r ("executionId", name, status, "replicaId", runner,
		"parentId", error, "startedAt", "updatedAt", "finishedAt")
	SELECT u.id, u.name, u.status, u.replica, u.runner, u.parent, u.error, u.started, coalesce(u.updated, now()), u.finished
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::timestamptz[], $9::timestamptz[], $10::timestamptz[])
		AS u(id, name, status, replica, runner, parent, error, started, updated, finished)
	ON CONFLICT ("executionId") DO UPDATE SET name = EXCLUDED.name, status = EXCLUDED.status,
		"replicaId" = EXCLUDED."replicaId", runner = EXCLUDED.runner, "parentId" = EXCLUDED."parentId",
		error = EXCLUDED.error, "startedAt" = coalesce(EXCLUDED."startedAt", r."startedAt"),
		"updatedAt" = EXCLUDED."updatedAt", "finishedAt" = EXCLUDED."finishedAt"`

// sqlRecordSteps upserts step attempts, one array element each; a NULL
// startedAt keeps the stored one.
const sqlRecordSteps = `INSERT INTO _voltro_workflow_run_steps AS t ("executionId", seq, attempt, name, kind, status,
		runner, "replicaId", error, "startedAt", "finishedAt", trace)
	SELECT * FROM unnest($1::text[], $2::integer[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::text[], $10::timestamptz[], $11::timestamptz[], $12::text[])
	ON CONFLICT ("executionId", seq, attempt) DO UPDATE SET name = EXCLUDED.name, kind = EXCLUDED.kind,
		status = EXCLUDED.status, runner = EXCLUDED.runner, "replicaId" = EXCLUDED."replicaId", error = EXCLUDED.error,
		"startedAt" = coalesce(EXCLUDED."startedAt", t."startedAt"), "finishedAt" = EXCLUDED."finishedAt",
		trace = EXCLUDED.trace`

// sqlRecordEvents appends events, one array element each; a NULL at is the
// database's now.
const sqlRecordEvents = `INSERT INTO _voltro_workflow_run_events ("executionId", at, kind, detail, "replicaId", runner)
	SELECT u.id, coalesce(u.at, now()), u.kind, u.detail, u.replica, u.runner
	FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[])
		AS u(id, at, kind, detail, replica, runner)`

// Record writes the batch as one pgx batch: one round trip, one implicit
// transaction, one (asynchronous) commit, at most one statement per table.
// ON CONFLICT cannot touch a row twice in one statement, so runs and steps
// are first merged to one record per key.
func (s *Store) Record(ctx context.Context, b store.IntrospectionBatch) error {
	if b.Len() == 0 {
		return nil
	}
	q := &pgx.Batch{}
	q.Queue(sqlAsyncCommit)
	if runs := lastRuns(b.Runs); len(runs) > 0 {
		n := len(runs)
		id, name, status, replica, runner, parent, errText := make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		started, updated, finished := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
		for i, r := range runs {
			id[i], name[i], status[i], replica[i], runner[i], parent[i], errText[i] =
				r.ExecutionID, r.Name, string(r.Status), r.ReplicaID, r.Runner, r.ParentID, r.Error
			started[i], updated[i], finished[i] = nullTime(r.StartedAt), nullTime(r.UpdatedAt), nullTime(r.FinishedAt)
		}
		q.Queue(sqlRecordRuns, id, name, status, replica, runner, parent, errText, started, updated, finished)
	}
	if steps := lastSteps(b.Steps); len(steps) > 0 {
		n := len(steps)
		id, name, kind, status, runner, replica, errText, trace := make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		seq, attempt := make([]int32, n), make([]int32, n)
		started, finished := make([]*time.Time, n), make([]*time.Time, n)
		for i, r := range steps {
			id[i], seq[i], attempt[i], name[i], kind[i], status[i], runner[i], replica[i], errText[i], trace[i] =
				r.ExecutionID, int32(r.Seq), int32(r.Attempt), r.Name, string(r.Kind), r.Status, r.Runner, r.ReplicaID, r.Error, r.Trace
			started[i], finished[i] = nullTime(r.StartedAt), nullTime(r.FinishedAt)
		}
		q.Queue(sqlRecordSteps, id, seq, attempt, name, kind, status, runner, replica, errText, started, finished, trace)
	}
	if n := len(b.Events); n > 0 {
		id, kind, detail, replica, runner := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		at := make([]*time.Time, n)
		for i, e := range b.Events {
			id[i], at[i], kind[i], detail[i], replica[i], runner[i] = e.ExecutionID, nullTime(e.At), e.Kind, e.Detail, e.ReplicaID, e.Runner
		}
		q.Queue(sqlRecordEvents, id, at, kind, detail, replica, runner)
	}
	return wrapErr("record introspection", s.pool.SendBatch(ctx, q).Close())
}

// lastRuns merges runs to one record per execution id, as upserting them
// one by one would leave it: the last record, with the start time of an
// earlier one when it has none. The result is sorted by id, so concurrent
// batches lock their rows in the same order.
func lastRuns(rs []store.RunRecord) []store.RunRecord {
	at := make(map[string]int, len(rs))
	out := make([]store.RunRecord, 0, len(rs))
	for _, r := range rs {
		i, seen := at[r.ExecutionID]
		if !seen {
			at[r.ExecutionID] = len(out)
			out = append(out, r)
			continue
		}
		if r.StartedAt.IsZero() {
			r.StartedAt = out[i].StartedAt
		}
		out[i] = r
	}
	slices.SortFunc(out, func(a, b store.RunRecord) int { return strings.Compare(a.ExecutionID, b.ExecutionID) })
	return out
}

// stepKey is a step attempt's primary key.
type stepKey struct {
	id           string
	seq, attempt int
}

// lastSteps is lastRuns for step attempts, keyed by (execution, seq,
// attempt).
func lastSteps(rs []store.StepRecord) []store.StepRecord {
	at := make(map[stepKey]int, len(rs))
	out := make([]store.StepRecord, 0, len(rs))
	for _, r := range rs {
		k := stepKey{r.ExecutionID, r.Seq, r.Attempt}
		i, seen := at[k]
		if !seen {
			at[k] = len(out)
			out = append(out, r)
			continue
		}
		if r.StartedAt.IsZero() {
			r.StartedAt = out[i].StartedAt
		}
		out[i] = r
	}
	slices.SortFunc(out, func(a, b store.StepRecord) int {
		return cmp.Or(strings.Compare(a.ExecutionID, b.ExecutionID), cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Attempt, b.Attempt))
	})
	return out
}

func (s *Store) RunSteps(ctx context.Context, id string) ([]store.StepRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, name, kind, attempt, status, runner, "replicaId", error,
			"startedAt", "finishedAt", trace
		FROM _voltro_workflow_run_steps WHERE "executionId" = $1 ORDER BY seq, attempt`, id)
	if err != nil {
		return nil, wrapErr("run steps", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.StepRecord, error) {
		r := store.StepRecord{ExecutionID: id}
		var kind string
		var started, finished *time.Time
		err := row.Scan(&r.Seq, &r.Name, &kind, &r.Attempt, &r.Status, &r.Runner, &r.ReplicaID, &r.Error,
			&started, &finished, &r.Trace)
		r.Kind, r.StartedAt, r.FinishedAt = store.JournalKind(kind), timeOf(started), timeOf(finished)
		return r, err
	})
	if err != nil {
		return nil, wrapErr("run steps", err)
	}
	return out, nil
}

func (s *Store) RunEvents(ctx context.Context, id string) ([]store.EventRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT at, kind, detail, "replicaId", runner
		FROM _voltro_workflow_run_events WHERE "executionId" = $1 ORDER BY at, id`, id)
	if err != nil {
		return nil, wrapErr("run events", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.EventRecord, error) {
		e := store.EventRecord{ExecutionID: id}
		err := row.Scan(&e.At, &e.Kind, &e.Detail, &e.ReplicaID, &e.Runner)
		return e, err
	})
	if err != nil {
		return nil, wrapErr("run events", err)
	}
	return out, nil
}
