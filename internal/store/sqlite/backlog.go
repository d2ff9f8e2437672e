package sqlite

import (
	"context"
	"database/sql"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// deadBacklogSQL dead-letters the backlog of an entity type (of one entity
// when @entity_id is not empty): pending messages, and claims that are void
// (expired, or at an epoch older than the shard's lock row).
const deadBacklogSQL = `UPDATE voltro_messages SET state = 'dead', last_error = @last_error, processed_at = @now, claim_expires_at = 0
	WHERE entity_type = @entity_type AND (@entity_id = '' OR entity_id = @entity_id) AND state IN ('pending', 'claimed')
		AND (state = 'pending' OR claim_expires_at <= @now
			OR NOT EXISTS (SELECT 1 FROM voltro_shard_locks AS l WHERE l.shard = voltro_messages.shard AND l.epoch <= voltro_messages.claim_epoch))
	RETURNING id`

const cancelExecSQL = `UPDATE voltro_workflow_executions SET status = 'cancelled', error = ?, cancel_requested = 1,
	waiting_on = '', updated_at = ?, finished_at = ? WHERE id = ? AND ` + notTerminal

func (s *Store) DeadLetterBacklog(ctx context.Context, sel store.BacklogSelect, lastError string, replyErr []byte) (int, error) {
	if sel.EntityType == "" {
		return 0, errs.New(errs.CodeInvalidArgument, "dead-lettering a backlog needs an entity type")
	}
	n := 0
	err := s.inTx(ctx, "dead-letter backlog", []string{deadBacklogSQL, insertReplySQL}, func(tx *sql.Tx) (bool, error) {
		var err error
		n, err = s.deadBacklogTx(ctx, tx, sel, lastError, replyErr, s.now())
		return err == nil, err
	})
	return n, err
}

func (s *Store) deadBacklogTx(ctx context.Context, tx *sql.Tx, sel store.BacklogSelect, lastError string, replyErr []byte, t int64) (int, error) {
	upd, err := s.stmt(ctx, tx, deadBacklogSQL)
	if err != nil {
		return 0, err
	}
	rows, err := upd.QueryContext(ctx, sql.Named("last_error", lastError), sql.Named("now", t),
		sql.Named("entity_type", sel.EntityType), sql.Named("entity_id", sel.EntityID))
	if err != nil {
		return 0, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	ins, err := s.stmt(ctx, tx, insertReplySQL)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if _, err := ins.ExecContext(ctx, id, nil, blob(replyErr), t); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

func (s *Store) CancelExecution(ctx context.Context, c store.ExecutionCancel) (bool, int, error) {
	if c.ID == "" || c.EntityType == "" {
		return false, 0, errs.New(errs.CodeInvalidArgument, "cancelling a run needs its id and entity type")
	}
	cancelled, n := false, 0
	err := s.inTx(ctx, "cancel workflow execution "+c.ID, []string{cancelExecSQL, execExistsSQL, deadBacklogSQL, insertReplySQL}, func(tx *sql.Tx) (bool, error) {
		upd, err := s.stmt(ctx, tx, cancelExecSQL)
		if err != nil {
			return false, err
		}
		t := s.now()
		r, err := upd.ExecContext(ctx, blob(c.Error), t, t, c.ID)
		if err != nil {
			return false, err
		}
		if k, err := r.RowsAffected(); err != nil {
			return false, err
		} else if k == 0 {
			return false, s.execMissing(ctx, tx, c.ID) // finished already, or unknown
		}
		if n, err = s.deadBacklogTx(ctx, tx, store.BacklogSelect{EntityType: c.EntityType, EntityID: c.ID}, c.LastError, c.ReplyErr, t); err != nil {
			return false, err
		}
		cancelled = true
		return true, nil
	})
	return cancelled, n, err
}
