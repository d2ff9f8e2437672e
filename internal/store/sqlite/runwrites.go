// The fenced run writes (store.RunWriter): WriteRuns, every write of a call
// in one BEGIN IMMEDIATE transaction.

package sqlite

import (
	"context"
	"database/sql"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// runStateSQL is the fence and the run's status, for one run write.
const runStateSQL = `SELECT ` + holdsShard + `, (SELECT status FROM voltro_workflow_executions WHERE id = @id)`

// completeRunMessageSQL marks the message that ran a replay processed.
const completeRunMessageSQL = `UPDATE voltro_messages SET state = 'processed', processed_at = @now, claim_expires_at = 0
	WHERE id = @msg AND shard = @shard AND state = 'claimed' AND claimed_by = @owner AND claim_epoch = @epoch`

// WriteRuns applies the writes in one BEGIN IMMEDIATE transaction; the
// single writer connection makes the state read and the writes atomic.
func (s *Store) WriteRuns(ctx context.Context, ws []store.RunWrite) ([]error, error) {
	for _, w := range ws {
		if err := store.CheckRunWrite(w); err != nil {
			return nil, err
		}
	}
	out := make([]error, len(ws))
	err := s.inTx(ctx, "write workflow runs", []string{runStateSQL, appendJournalSQL, updateExecSQL, completeRunMessageSQL, insertReplySQL},
		func(tx *sql.Tx) (bool, error) {
			t := s.now()
			for i, w := range ws {
				o, err := s.writeRun(ctx, tx, w, t)
				if err != nil {
					return false, err
				}
				out[i] = o
			}
			return true, nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writeRun applies one write inside tx and returns its outcome.
func (s *Store) writeRun(ctx context.Context, tx *sql.Tx, rw store.RunWrite, t int64) (error, error) {
	id := rw.ExecutionID()
	fence := []any{sql.Named("shard", rw.Shard), sql.Named("owner", rw.Fence.Owner), sql.Named("epoch", rw.Fence.Epoch)}
	exec := func(query string, args ...any) (int64, error) {
		st, err := s.stmt(ctx, tx, query)
		if err != nil {
			return 0, err
		}
		r, err := st.ExecContext(ctx, args...)
		if err != nil {
			return 0, err
		}
		return r.RowsAffected()
	}
	st, err := s.stmt(ctx, tx, runStateSQL)
	if err != nil {
		return nil, err
	}
	var held bool
	var status sql.NullString
	if err := st.QueryRowContext(ctx, append(fence, sql.Named("id", id))...).Scan(&held, &status); err != nil {
		return nil, err
	}
	switch {
	case !held:
		return errs.New(errs.CodeFenced, "write for %s: shard %s is not held by %s at epoch %d", id, rw.Shard, rw.Fence.Owner, rw.Fence.Epoch), nil
	case !status.Valid:
		return noExecution(id), nil
	}
	if e := rw.Entry; e != nil {
		finished := micros(e.FinishedAt)
		if finished == 0 {
			finished = t
		}
		n, err := exec(appendJournalSQL, append(fence,
			sql.Named("id", id), sql.Named("seq", e.Seq), sql.Named("kind", string(e.Kind)), sql.Named("name", e.Name),
			sql.Named("result", blob(e.Result)), sql.Named("error", blob(e.Error)), sql.Named("attempts", e.Attempts),
			sql.Named("runner", e.Runner), sql.Named("started_at", micros(e.StartedAt)), sql.Named("finished_at", finished))...)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return errs.New(errs.CodeAlreadyExists, "journal entry %s#%d exists", id, e.Seq), nil
		}
	}
	u := rw.Update
	if u == nil {
		return nil, nil
	}
	terminal := u.Status.Terminal()
	var output, failure any
	if terminal {
		output, failure = blob(u.Output), blob(u.Error)
	}
	n, err := exec(updateExecSQL, append(fence,
		sql.Named("status", string(u.Status)), sql.Named("waiting_on", u.WaitingOn), sql.Named("now", t),
		sql.Named("runner", u.Runner), sql.Named("terminal", terminal), sql.Named("output", output), sql.Named("error", failure),
		sql.Named("id", id))...)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return errs.New(errs.CodeAlreadyExists, "workflow execution %q is already %s", id, status.String), nil
	}
	if rw.Message == 0 {
		return nil, nil
	}
	if n, err = exec(completeRunMessageSQL, append(fence, sql.Named("msg", rw.Message), sql.Named("now", t))...); err != nil {
		return nil, err
	}
	if n == 0 {
		return errs.New(errs.CodeFenced, "workflow execution %q was written, but message %d is not claimed by %s at epoch %d", id, rw.Message, rw.Fence.Owner, rw.Fence.Epoch), nil
	}
	if _, err := exec(insertReplySQL, rw.Message, nil, nil, t); err != nil {
		return nil, err
	}
	return nil, nil
}
