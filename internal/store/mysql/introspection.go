// Workflow introspection (store.Introspection): the _voltro_workflow_*
// tables, camelCase columns, written a batch per transaction by the
// engine's background writer and read only by tools, never by the engine
// for correctness.

package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/voltro/voltro/internal/store"
)

// Multi-row statements are cut at introChunkRows rows or about
// introChunkBytes of values, whichever comes first, to stay far below
// max_allowed_packet. A batch goes as one multi-statement round trip only
// while its values stay under introBatchBytes; a larger one runs statement by
// statement in a transaction.
const (
	introChunkRows  = 500
	introChunkBytes = 256 << 10
	introBatchBytes = 1 << 20
	introRowBytes   = 64 // per-row allowance for numbers, times and punctuation
)

const (
	recordRunsInsert = "INSERT INTO `_voltro_workflow_runs` (`executionId`, `name`, `status`, `replicaId`, `runner`, " +
		"`parentId`, `error`, `startedAt`, `updatedAt`, `finishedAt`) VALUES "
	recordRunsRow    = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	recordRunsUpsert = " ON DUPLICATE KEY UPDATE `name` = VALUES(`name`), `status` = VALUES(`status`), `replicaId` = VALUES(`replicaId`), " +
		"`runner` = VALUES(`runner`), `parentId` = VALUES(`parentId`), `error` = VALUES(`error`), " +
		"`startedAt` = COALESCE(VALUES(`startedAt`), `startedAt`), `updatedAt` = VALUES(`updatedAt`), `finishedAt` = VALUES(`finishedAt`)"

	recordStepsInsert = "INSERT INTO `_voltro_workflow_run_steps` (`executionId`, `seq`, `attempt`, `name`, `kind`, " +
		"`status`, `runner`, `replicaId`, `error`, `startedAt`, `finishedAt`, `trace`) VALUES "
	recordStepsRow    = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	recordStepsUpsert = " ON DUPLICATE KEY UPDATE `name` = VALUES(`name`), `kind` = VALUES(`kind`), `status` = VALUES(`status`), " +
		"`runner` = VALUES(`runner`), `replicaId` = VALUES(`replicaId`), `error` = VALUES(`error`), " +
		"`startedAt` = COALESCE(VALUES(`startedAt`), `startedAt`), `finishedAt` = VALUES(`finishedAt`), `trace` = VALUES(`trace`)"

	recordEventsInsert = "INSERT INTO `_voltro_workflow_run_events` (`executionId`, `at`, `kind`, `detail`, `replicaId`, `runner`) VALUES "
	recordEventsRow    = "(?, COALESCE(?, UTC_TIMESTAMP(6)), ?, ?, ?, ?)"
)

// Record writes the batch in one transaction of multi-row statements: runs
// and steps upserted (a record without a start time keeps the stored one),
// events appended (one without a time gets the database's now). Rows of one
// statement are applied in order, so a later record of a key updates the
// row an earlier one wrote, and keys are sorted (stably) so concurrent
// batches lock rows in the same order. With multi-statement queries and not
// on Galera (see batched), the transaction is one round trip.
func (s *Store) Record(ctx context.Context, b store.IntrospectionBatch) error {
	if b.Len() == 0 {
		return nil
	}
	runs := slices.Clone(b.Runs)
	slices.SortStableFunc(runs, func(x, y store.RunRecord) int { return strings.Compare(x.ExecutionID, y.ExecutionID) })
	steps := slices.Clone(b.Steps)
	slices.SortStableFunc(steps, func(x, y store.StepRecord) int {
		return cmp.Or(strings.Compare(x.ExecutionID, y.ExecutionID), cmp.Compare(x.Seq, y.Seq), cmp.Compare(x.Attempt, y.Attempt))
	})

	var stmts []introStmt
	stmts = appendChunks(stmts, runs, recordRunsInsert, recordRunsRow, recordRunsUpsert, func(r store.RunRecord) []any {
		return []any{r.ExecutionID, r.Name, string(r.Status), r.ReplicaID, r.Runner, r.ParentID, r.Error,
			nullTime(r.StartedAt), nullTime(r.UpdatedAt), nullTime(r.FinishedAt)}
	})
	stmts = appendChunks(stmts, steps, recordStepsInsert, recordStepsRow, recordStepsUpsert, func(r store.StepRecord) []any {
		return []any{r.ExecutionID, r.Seq, r.Attempt, r.Name, string(r.Kind), r.Status, r.Runner, r.ReplicaID, r.Error,
			nullTime(r.StartedAt), nullTime(r.FinishedAt), r.Trace}
	})
	stmts = appendChunks(stmts, b.Events, recordEventsInsert, recordEventsRow, "", func(e store.EventRecord) []any {
		return []any{e.ExecutionID, nullTime(e.At), e.Kind, e.Detail, e.ReplicaID, e.Runner}
	})

	size := 0
	for _, st := range stmts {
		size += st.size
	}
	if s.batched() && size <= introBatchBytes {
		query := make([]string, 0, len(stmts)+2)
		var args []any
		query = append(query, "START TRANSACTION")
		for _, st := range stmts {
			query = append(query, st.query)
			args = append(args, st.args...)
		}
		query = append(query, "COMMIT")
		_, err := s.execBatch(ctx, strings.Join(query, ";\n"), args...)
		return wrapErr("record workflow introspection", err)
	}
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		for _, st := range stmts {
			if _, err := tx.ExecContext(ctx, st.query, st.args...); err != nil {
				return err
			}
		}
		return nil
	})
	return wrapErr("record workflow introspection", err)
}

// introStmt is one multi-row statement of a batch and the approximate size
// of its values.
type introStmt struct {
	query string
	args  []any
	size  int
}

// appendChunks appends multi-row statements (insert, rows of row, suffix)
// for recs, cut by introChunkRows and introChunkBytes.
func appendChunks[T any](stmts []introStmt, recs []T, insert, row, suffix string, values func(T) []any) []introStmt {
	var cur introStmt
	rows := 0
	cut := func() {
		if rows == 0 {
			return
		}
		cur.query = insert + strings.Repeat(row+", ", rows-1) + row + suffix
		stmts = append(stmts, cur)
		cur, rows = introStmt{}, 0
	}
	for _, r := range recs {
		vs := values(r)
		n := introRowBytes
		for _, v := range vs {
			if str, ok := v.(string); ok {
				n += 2 * len(str) // escaping may double a string
			}
		}
		if rows > 0 && (rows >= introChunkRows || cur.size+n > introChunkBytes) {
			cut()
		}
		cur.args = append(cur.args, vs...)
		cur.size += n
		rows++
	}
	cut()
	return stmts
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
