// Workflow introspection (store.Introspection): the _voltro_workflow_*
// tables with quoted camelCase columns, for humans and dashboards. The
// engine writes them in the background, a batch per transaction, and never
// reads them for correctness; writes go through the write connection like
// every store write.

package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/voltro/voltro/internal/store"
)

// recordRunSQL upserts a run's row; a zero startedAt keeps the stored one.
const recordRunSQL = `INSERT INTO "_voltro_workflow_runs"
		("executionId", "name", "status", "replicaId", "runner", "parentId", "error", "startedAt", "updatedAt", "finishedAt")
	VALUES (@id, @name, @status, @replica, @runner, @parent, @error, @started, @updated, @finished)
	ON CONFLICT ("executionId") DO UPDATE SET
		"name" = excluded."name", "status" = excluded."status", "replicaId" = excluded."replicaId",
		"runner" = excluded."runner", "parentId" = excluded."parentId", "error" = excluded."error",
		"startedAt" = CASE WHEN excluded."startedAt" = 0 THEN "_voltro_workflow_runs"."startedAt" ELSE excluded."startedAt" END,
		"updatedAt" = excluded."updatedAt", "finishedAt" = excluded."finishedAt"`

// recordStepSQL upserts one attempt of a step; a zero startedAt keeps the
// stored one.
const recordStepSQL = `INSERT INTO "_voltro_workflow_run_steps"
		("executionId", "seq", "attempt", "name", "kind", "status", "runner", "replicaId", "error", "startedAt", "finishedAt", "trace")
	VALUES (@id, @seq, @attempt, @name, @kind, @status, @runner, @replica, @error, @started, @finished, @trace)
	ON CONFLICT ("executionId", "seq", "attempt") DO UPDATE SET
		"name" = excluded."name", "kind" = excluded."kind", "status" = excluded."status",
		"runner" = excluded."runner", "replicaId" = excluded."replicaId", "error" = excluded."error",
		"startedAt" = CASE WHEN excluded."startedAt" = 0 THEN "_voltro_workflow_run_steps"."startedAt" ELSE excluded."startedAt" END,
		"finishedAt" = excluded."finishedAt", "trace" = excluded."trace"`

const recordEventSQL = `INSERT INTO "_voltro_workflow_run_events"
		("executionId", "at", "kind", "detail", "replicaId", "runner")
	VALUES (?, ?, ?, ?, ?, ?)`

// Record writes the batch in one transaction on the write connection, one
// prepared upsert or insert per record in batch order, so a later record of
// a key updates the row an earlier one wrote.
func (s *Store) Record(ctx context.Context, b store.IntrospectionBatch) error {
	if b.Len() == 0 {
		return nil
	}
	var queries []string
	if len(b.Runs) > 0 {
		queries = append(queries, recordRunSQL)
	}
	if len(b.Steps) > 0 {
		queries = append(queries, recordStepSQL)
	}
	if len(b.Events) > 0 {
		queries = append(queries, recordEventSQL)
	}
	return s.inTx(ctx, "record workflow introspection", queries, func(tx *sql.Tx) (bool, error) {
		t := s.now()
		if len(b.Runs) > 0 {
			st, err := s.stmt(ctx, tx, recordRunSQL)
			if err != nil {
				return false, err
			}
			for _, r := range b.Runs {
				updated := micros(r.UpdatedAt)
				if updated == 0 {
					updated = t
				}
				if _, err := st.ExecContext(ctx,
					sql.Named("id", r.ExecutionID), sql.Named("name", r.Name), sql.Named("status", string(r.Status)),
					sql.Named("replica", r.ReplicaID), sql.Named("runner", r.Runner), sql.Named("parent", r.ParentID),
					sql.Named("error", r.Error), sql.Named("started", micros(r.StartedAt)), sql.Named("updated", updated),
					sql.Named("finished", micros(r.FinishedAt))); err != nil {
					return false, fmt.Errorf("run %s: %w", r.ExecutionID, err)
				}
			}
		}
		if len(b.Steps) > 0 {
			st, err := s.stmt(ctx, tx, recordStepSQL)
			if err != nil {
				return false, err
			}
			for _, r := range b.Steps {
				if _, err := st.ExecContext(ctx,
					sql.Named("id", r.ExecutionID), sql.Named("seq", r.Seq), sql.Named("attempt", r.Attempt), sql.Named("name", r.Name),
					sql.Named("kind", string(r.Kind)), sql.Named("status", r.Status), sql.Named("runner", r.Runner),
					sql.Named("replica", r.ReplicaID), sql.Named("error", r.Error), sql.Named("started", micros(r.StartedAt)),
					sql.Named("finished", micros(r.FinishedAt)), sql.Named("trace", r.Trace)); err != nil {
					return false, fmt.Errorf("step %s#%d attempt %d: %w", r.ExecutionID, r.Seq, r.Attempt, err)
				}
			}
		}
		if len(b.Events) > 0 {
			st, err := s.stmt(ctx, tx, recordEventSQL)
			if err != nil {
				return false, err
			}
			for _, e := range b.Events {
				at := micros(e.At)
				if at == 0 {
					at = t
				}
				if _, err := st.ExecContext(ctx, e.ExecutionID, at, e.Kind, e.Detail, e.ReplicaID, e.Runner); err != nil {
					return false, fmt.Errorf("event %s: %w", e.ExecutionID, err)
				}
			}
		}
		return true, nil
	})
}

func (s *Store) RunSteps(ctx context.Context, executionID string) ([]store.StepRecord, error) {
	const op = "read workflow run steps"
	st, err := s.prep(ctx, s.r, `SELECT "seq", "attempt", "name", "kind", "status", "runner", "replicaId", "error",
			"startedAt", "finishedAt", "trace"
		FROM "_voltro_workflow_run_steps" WHERE "executionId" = ? ORDER BY "seq", "attempt"`)
	if err != nil {
		return nil, s.wrap(err, op)
	}
	rows, err := st.QueryContext(ctx, executionID)
	if err != nil {
		return nil, s.wrap(err, op)
	}
	defer rows.Close()
	var out []store.StepRecord
	for rows.Next() {
		r := store.StepRecord{ExecutionID: executionID}
		var kind string
		var started, finished int64
		if err := rows.Scan(&r.Seq, &r.Attempt, &r.Name, &kind, &r.Status, &r.Runner, &r.ReplicaID, &r.Error,
			&started, &finished, &r.Trace); err != nil {
			return nil, s.wrap(err, op)
		}
		r.Kind = store.JournalKind(kind)
		r.StartedAt, r.FinishedAt = fromMicros(started), fromMicros(finished)
		out = append(out, r)
	}
	return out, s.wrap(rows.Err(), op)
}

func (s *Store) RunEvents(ctx context.Context, executionID string) ([]store.EventRecord, error) {
	const op = "read workflow run events"
	st, err := s.prep(ctx, s.r, `SELECT "at", "kind", "detail", "replicaId", "runner"
		FROM "_voltro_workflow_run_events" WHERE "executionId" = ? ORDER BY "at", "id"`)
	if err != nil {
		return nil, s.wrap(err, op)
	}
	rows, err := st.QueryContext(ctx, executionID)
	if err != nil {
		return nil, s.wrap(err, op)
	}
	defer rows.Close()
	var out []store.EventRecord
	for rows.Next() {
		e := store.EventRecord{ExecutionID: executionID}
		var at int64
		if err := rows.Scan(&at, &e.Kind, &e.Detail, &e.ReplicaID, &e.Runner); err != nil {
			return nil, s.wrap(err, op)
		}
		e.At = fromMicros(at)
		out = append(out, e)
	}
	return out, s.wrap(rows.Err(), op)
}
