// Workflow introspection (store.WorkflowIntrospection): the _voltro_workflow_*
// tables, camelCase columns, written by one autocommit upsert each and read
// only by tools, never by the engine for correctness.
package mysql

import (
	"context"
	"database/sql"

	"github.com/voltro/voltro/internal/store"
)

var _ store.WorkflowIntrospection = (*Store)(nil)

// RecordRun upserts the run's row; a record without a start time keeps the
// stored one.
func (s *Store) RecordRun(ctx context.Context, r store.RunRecord) error {
	_, err := s.exec(ctx, "INSERT INTO `_voltro_workflow_runs` (`executionId`, `name`, `status`, `replicaId`, `runner`, "+
		"`parentId`, `error`, `startedAt`, `updatedAt`, `finishedAt`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "+
		"ON DUPLICATE KEY UPDATE `name` = VALUES(`name`), `status` = VALUES(`status`), `replicaId` = VALUES(`replicaId`), "+
		"`runner` = VALUES(`runner`), `parentId` = VALUES(`parentId`), `error` = VALUES(`error`), "+
		"`startedAt` = COALESCE(VALUES(`startedAt`), `startedAt`), `updatedAt` = VALUES(`updatedAt`), `finishedAt` = VALUES(`finishedAt`)",
		r.ExecutionID, r.Name, string(r.Status), r.ReplicaID, r.Runner, r.ParentID, r.Error,
		nullTime(r.StartedAt), nullTime(r.UpdatedAt), nullTime(r.FinishedAt))
	return wrapErr("record workflow run", err)
}

// RecordStep upserts one attempt of a step; a record without a start time
// keeps the stored one.
func (s *Store) RecordStep(ctx context.Context, r store.StepRecord) error {
	_, err := s.exec(ctx, "INSERT INTO `_voltro_workflow_run_steps` (`executionId`, `seq`, `attempt`, `name`, `kind`, "+
		"`status`, `runner`, `replicaId`, `error`, `startedAt`, `finishedAt`, `trace`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "+
		"ON DUPLICATE KEY UPDATE `name` = VALUES(`name`), `kind` = VALUES(`kind`), `status` = VALUES(`status`), "+
		"`runner` = VALUES(`runner`), `replicaId` = VALUES(`replicaId`), `error` = VALUES(`error`), "+
		"`startedAt` = COALESCE(VALUES(`startedAt`), `startedAt`), `finishedAt` = VALUES(`finishedAt`), `trace` = VALUES(`trace`)",
		r.ExecutionID, r.Seq, r.Attempt, r.Name, string(r.Kind), r.Status, r.Runner, r.ReplicaID, r.Error,
		nullTime(r.StartedAt), nullTime(r.FinishedAt), r.Trace)
	return wrapErr("record workflow step", err)
}

// RecordEvent appends an event; one without a time gets the database's now.
func (s *Store) RecordEvent(ctx context.Context, e store.EventRecord) error {
	_, err := s.exec(ctx, "INSERT INTO `_voltro_workflow_run_events` (`executionId`, `at`, `kind`, `detail`, `replicaId`, `runner`) "+
		"VALUES (?, COALESCE(?, UTC_TIMESTAMP(6)), ?, ?, ?, ?)",
		e.ExecutionID, nullTime(e.At), e.Kind, e.Detail, e.ReplicaID, e.Runner)
	return wrapErr("record workflow event", err)
}

func (s *Store) RunSteps(ctx context.Context, executionID string) ([]store.StepRecord, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT `seq`, `attempt`, `name`, `kind`, `status`, `runner`, `replicaId`, `error`, "+
		"`startedAt`, `finishedAt`, `trace` FROM `_voltro_workflow_run_steps` WHERE `executionId` = ? ORDER BY `seq`, `attempt`", executionID)
	if err != nil {
		return nil, wrapErr("read workflow steps", err)
	}
	defer rows.Close()
	var out []store.StepRecord
	for rows.Next() {
		r := store.StepRecord{ExecutionID: executionID}
		var kind string
		var errText sql.NullString
		var started, finished sql.NullTime
		if err := rows.Scan(&r.Seq, &r.Attempt, &r.Name, &kind, &r.Status, &r.Runner, &r.ReplicaID, &errText,
			&started, &finished, &r.Trace); err != nil {
			return nil, wrapErr("read workflow steps", err)
		}
		r.Kind, r.Error, r.StartedAt, r.FinishedAt = store.JournalKind(kind), errText.String, timeOf(started), timeOf(finished)
		out = append(out, r)
	}
	return out, wrapErr("read workflow steps", rows.Err())
}

func (s *Store) RunEvents(ctx context.Context, executionID string) ([]store.EventRecord, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT `at`, `kind`, `detail`, `replicaId`, `runner` FROM `_voltro_workflow_run_events` "+
		"WHERE `executionId` = ? ORDER BY `at`, `id`", executionID)
	if err != nil {
		return nil, wrapErr("read workflow events", err)
	}
	defer rows.Close()
	var out []store.EventRecord
	for rows.Next() {
		e := store.EventRecord{ExecutionID: executionID}
		var detail sql.NullString
		if err := rows.Scan(&e.At, &e.Kind, &detail, &e.ReplicaID, &e.Runner); err != nil {
			return nil, wrapErr("read workflow events", err)
		}
		e.Detail = detail.String
		out = append(out, e)
	}
	return out, wrapErr("read workflow events", rows.Err())
}
