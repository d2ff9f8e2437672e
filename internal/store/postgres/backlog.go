package postgres

import (
	"context"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// backlogCTEs dead-letters the backlog of entity type $1 (entity $2 when
// not empty): pending messages, and claims that are void (expired, or at an
// epoch older than the shard's lock row). $3 is the last error, $4 the
// reply's error, $5 the NOTIFY channel; gate, when not empty, is a
// condition the update also needs. It defines u (the moved messages) and n
// (the reply notifications, to be referenced so that they run).
func backlogCTEs(gate string) string {
	if gate != "" {
		gate = " AND " + gate
	}
	return `u AS (
		UPDATE voltro_messages m SET state = 'dead', last_error = $3, processed_at = now(), claim_expires_at = NULL
		WHERE m.entity_type = $1 AND ($2 = '' OR m.entity_id = $2) AND m.state IN ('pending', 'claimed')
			AND (m.state = 'pending' OR m.claim_expires_at <= now()
				OR NOT EXISTS (SELECT 1 FROM voltro_shard_locks l WHERE l.shard = m.shard AND l.epoch <= m.claim_epoch))` + gate + `
		RETURNING m.id, m.reply_to
	), r AS (
		INSERT INTO voltro_replies (request_id, error, created_at)
		SELECT id, $4, now() FROM u
		ON CONFLICT (request_id) DO NOTHING
	), n AS (
		SELECT pg_notify($5, 'r ' || id) FROM u WHERE reply_to <> ''
	)`
}

var sqlDeadLetterBacklog = `WITH ` + backlogCTEs("") + `
	SELECT (SELECT count(*) FROM u) + 0 * (SELECT count(*) FROM n)`

func (s *Store) DeadLetterBacklog(ctx context.Context, sel store.BacklogSelect, lastError string, replyErr []byte) (int, error) {
	if sel.EntityType == "" {
		return 0, errs.New(errs.CodeInvalidArgument, "dead-lettering a backlog needs an entity type")
	}
	var n int
	if err := s.pool.QueryRow(ctx, sqlDeadLetterBacklog, sel.EntityType, sel.EntityID, lastError, replyErr, s.channel).Scan(&n); err != nil {
		return 0, wrapErr("dead-letter backlog", err)
	}
	return n, nil
}

// sqlCancelExecution finishes run $2 as cancelled with error $6 unless it
// is terminal, and only then dead-letters its entity's backlog.
var sqlCancelExecution = `WITH x AS (
		SELECT id FROM voltro_workflow_executions WHERE id = $2
	), c AS (
		UPDATE voltro_workflow_executions SET status = 'cancelled', error = $6, cancel_requested = true,
			waiting_on = '', updated_at = now(), finished_at = now()
		WHERE id = $2 AND status NOT IN ('completed', 'failed', 'cancelled')
		RETURNING id
	), ` + backlogCTEs("EXISTS (SELECT 1 FROM c)") + `
	SELECT EXISTS (SELECT 1 FROM x), EXISTS (SELECT 1 FROM c), (SELECT count(*) FROM u) + 0 * (SELECT count(*) FROM n)`

func (s *Store) CancelExecution(ctx context.Context, c store.ExecutionCancel) (bool, int, error) {
	if c.ID == "" || c.EntityType == "" {
		return false, 0, errs.New(errs.CodeInvalidArgument, "cancelling a run needs its id and entity type")
	}
	var found, cancelled bool
	var n int
	if err := s.pool.QueryRow(ctx, sqlCancelExecution, c.EntityType, c.ID, c.LastError, c.ReplyErr, s.channel, c.Error).
		Scan(&found, &cancelled, &n); err != nil {
		return false, 0, wrapErr("cancel execution", err)
	}
	if !found {
		return false, 0, errs.New(errs.CodeNotFound, "no workflow execution %q", c.ID)
	}
	return cancelled, n, nil
}
