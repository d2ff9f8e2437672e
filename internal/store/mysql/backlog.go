package mysql

import (
	"context"
	"database/sql"
	"errors"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// backlogTx runs in READ COMMITTED, as a claim does: the locking read takes
// no gap locks and lets go of the rows it read that do not match, so
// enqueues and claims of other types go on meanwhile.
var backlogTx = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// backlogChunk bounds the id list of one UPDATE or INSERT.
const backlogChunk = 500

func (s *Store) DeadLetterBacklog(ctx context.Context, sel store.BacklogSelect, lastError string, replyErr []byte) (int, error) {
	if sel.EntityType == "" {
		return 0, errs.New(errs.CodeInvalidArgument, "dead-lettering a backlog needs an entity type")
	}
	n := 0
	err := s.inTx(ctx, backlogTx, func(tx *sql.Tx) error {
		var err error
		n, err = deadBacklogTx(ctx, tx, sel, lastError, replyErr)
		return err
	})
	return n, wrapErr("dead-letter backlog", err)
}

// deadBacklogTx locks the undelivered messages sel names, keeps those that
// are pending or under a void claim (expired, or at an epoch older than the
// shard's ledger row), and moves them to dead with a final reply.
func deadBacklogTx(ctx context.Context, tx *sql.Tx, sel store.BacklogSelect, lastError string, replyErr []byte) (int, error) {
	epochs := map[string]int64{}
	rows, err := tx.QueryContext(ctx, "SELECT shard, epoch FROM voltro_shard_locks")
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var sh string
		var e int64
		if err := rows.Scan(&sh, &e); err != nil {
			rows.Close()
			return 0, err
		}
		epochs[sh] = e
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	rows, err = tx.QueryContext(ctx, `SELECT id, state, shard, claim_epoch, COALESCE(claim_expires_at <= UTC_TIMESTAMP(6), 1)
		FROM voltro_messages WHERE state IN ('pending', 'claimed') AND entity_type = ? AND (? = '' OR entity_id = ?)
		ORDER BY id FOR UPDATE`, sel.EntityType, sel.EntityID, sel.EntityID)
	if err != nil {
		return 0, err
	}
	var ids []int64
	for rows.Next() {
		var id, epoch int64
		var state, shard string
		var expired bool
		if err := rows.Scan(&id, &state, &shard, &epoch, &expired); err != nil {
			rows.Close()
			return 0, err
		}
		if cur, ok := epochs[shard]; state == "pending" || expired || !ok || cur > epoch {
			ids = append(ids, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for start := 0; start < len(ids); start += backlogChunk {
		part := ids[start:min(start+backlogChunk, len(ids))]
		if _, err := tx.ExecContext(ctx, `UPDATE voltro_messages SET state = 'dead', last_error = ?,
			processed_at = UTC_TIMESTAMP(6), claim_expires_at = NULL WHERE id IN (`+placeholders(len(part))+`)`,
			append([]any{lastError}, anys(part)...)...); err != nil {
			return 0, err
		}
		values := make([]any, 0, 2*len(part))
		q := "INSERT INTO voltro_replies (request_id, payload, error, created_at) VALUES "
		for i, id := range part {
			if i > 0 {
				q += ", "
			}
			q += "(?, NULL, ?, UTC_TIMESTAMP(6))"
			values = append(values, id, replyErr)
		}
		if _, err := tx.ExecContext(ctx, q+" ON DUPLICATE KEY UPDATE request_id = voltro_replies.request_id", values...); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

const cancelExec = `UPDATE voltro_workflow_executions SET status = 'cancelled', error = ?, cancel_requested = 1,
	waiting_on = '', updated_at = UTC_TIMESTAMP(6), finished_at = UTC_TIMESTAMP(6) WHERE id = ? AND ` + notTerminal

func (s *Store) CancelExecution(ctx context.Context, c store.ExecutionCancel) (bool, int, error) {
	if c.ID == "" || c.EntityType == "" {
		return false, 0, errs.New(errs.CodeInvalidArgument, "cancelling a run needs its id and entity type")
	}
	cancelled, n := false, 0
	err := s.inTx(ctx, backlogTx, func(tx *sql.Tx) error {
		cancelled, n = false, 0
		res, err := tx.ExecContext(ctx, cancelExec, c.Error, c.ID)
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil {
			return err
		} else if k == 0 {
			var one int
			err := tx.QueryRowContext(ctx, "SELECT 1 FROM voltro_workflow_executions WHERE id = ?", c.ID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return errs.New(errs.CodeNotFound, "no workflow execution %q", c.ID)
			}
			return err // nil: finished already
		}
		cancelled = true
		n, err = deadBacklogTx(ctx, tx, store.BacklogSelect{EntityType: c.EntityType, EntityID: c.ID}, c.LastError, c.ReplyErr)
		return err
	})
	if err != nil {
		return false, 0, wrapErr("cancel workflow execution", err)
	}
	return cancelled, n, nil
}
