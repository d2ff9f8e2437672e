// Workflow introspection: the _voltro_workflow_run* tables humans query to
// see what runs did, where and when. The engine writes them in the
// background and never reads them for correctness, so each write commits
// asynchronously (no wait for its WAL flush).
package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store"
)

var _ store.WorkflowIntrospection = (*Store)(nil)

// asyncCommit, as a FROM item of an INSERT's SELECT, turns off
// synchronous_commit for that statement's transaction only: the commit
// returns before its WAL is flushed. A crash may lose the last fraction of a
// second of introspection rows, never engine state, and the writes stop
// competing with the engine's commits for WAL flushes.
const asyncCommit = `(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`

const sqlRecordRun = `INSERT INTO _voltro_workflow_runs AS r ("executionId", name, status, "replicaId", runner,
		"parentId", error, "startedAt", "updatedAt", "finishedAt")
	SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::timestamptz,
		coalesce($9::timestamptz, now()), $10::timestamptz
	FROM ` + asyncCommit + `
	ON CONFLICT ("executionId") DO UPDATE SET name = EXCLUDED.name, status = EXCLUDED.status,
		"replicaId" = EXCLUDED."replicaId", runner = EXCLUDED.runner, "parentId" = EXCLUDED."parentId",
		error = EXCLUDED.error, "startedAt" = coalesce(EXCLUDED."startedAt", r."startedAt"),
		"updatedAt" = EXCLUDED."updatedAt", "finishedAt" = EXCLUDED."finishedAt"`

// RecordRun upserts the run's row; a zero StartedAt keeps the stored one.
func (s *Store) RecordRun(ctx context.Context, r store.RunRecord) error {
	_, err := s.pool.Exec(ctx, sqlRecordRun, r.ExecutionID, r.Name, string(r.Status), r.ReplicaID, r.Runner, r.ParentID,
		r.Error, nullTime(r.StartedAt), nullTime(r.UpdatedAt), nullTime(r.FinishedAt))
	return wrapErr("record run", err)
}

const sqlRecordStep = `INSERT INTO _voltro_workflow_run_steps AS t ("executionId", seq, attempt, name, kind, status,
		runner, "replicaId", error, "startedAt", "finishedAt", trace)
	SELECT $1::text, $2::integer, $3::integer, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text,
		$10::timestamptz, $11::timestamptz, $12::text
	FROM ` + asyncCommit + `
	ON CONFLICT ("executionId", seq, attempt) DO UPDATE SET name = EXCLUDED.name, kind = EXCLUDED.kind,
		status = EXCLUDED.status, runner = EXCLUDED.runner, "replicaId" = EXCLUDED."replicaId", error = EXCLUDED.error,
		"startedAt" = coalesce(EXCLUDED."startedAt", t."startedAt"), "finishedAt" = EXCLUDED."finishedAt",
		trace = EXCLUDED.trace`

// RecordStep upserts one attempt of a step; a zero StartedAt keeps the
// stored one.
func (s *Store) RecordStep(ctx context.Context, r store.StepRecord) error {
	_, err := s.pool.Exec(ctx, sqlRecordStep, r.ExecutionID, r.Seq, r.Attempt, r.Name, string(r.Kind), r.Status,
		r.Runner, r.ReplicaID, r.Error, nullTime(r.StartedAt), nullTime(r.FinishedAt), r.Trace)
	return wrapErr("record step", err)
}

const sqlRecordEvent = `INSERT INTO _voltro_workflow_run_events ("executionId", at, kind, detail, "replicaId", runner)
	SELECT $1::text, coalesce($2::timestamptz, now()), $3::text, $4::text, $5::text, $6::text
	FROM ` + asyncCommit

// RecordEvent appends an event; a zero At is the database's now.
func (s *Store) RecordEvent(ctx context.Context, e store.EventRecord) error {
	_, err := s.pool.Exec(ctx, sqlRecordEvent, e.ExecutionID, nullTime(e.At), e.Kind, e.Detail, e.ReplicaID, e.Runner)
	return wrapErr("record event", err)
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
