// Message writes: enqueue with dedupe, fenced claims, completion, release,
// attempts, dead letters and replays. All go through the write connection.

package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// messageCols is the column list scanMessage reads, in order.
const messageCols = `id, shard, entity_type, entity_id, tag, payload, headers, dedupe_key, reply_to, deliver_at,
	state, claimed_by, claim_epoch, claim_expires_at, attempts, last_error, created_at, processed_at`

// enqueueSQL inserts one message, already claimed when @want_claim is set
// and the shard's lock row names @owner at @epoch. A repeated dedupe key
// inserts nothing and returns no row.
const enqueueSQL = `INSERT INTO voltro_messages (shard, entity_type, entity_id, tag, payload, headers, dedupe_key,
		reply_to, deliver_at, state, claimed_by, claim_epoch, claim_expires_at, attempts, created_at)
	SELECT @shard, @entity_type, @entity_id, @tag, @payload, @headers, @dedupe_key, @reply_to, @deliver_at,
		CASE WHEN l.shard IS NULL THEN 'pending' ELSE 'claimed' END,
		CASE WHEN l.shard IS NULL THEN '' ELSE @owner END,
		CASE WHEN l.shard IS NULL THEN 0 ELSE @epoch END,
		CASE WHEN l.shard IS NULL THEN 0 ELSE @claim_expires END,
		CASE WHEN l.shard IS NULL THEN 0 ELSE 1 END,
		@now
	FROM (SELECT 1) LEFT JOIN voltro_shard_locks AS l
		ON @want_claim AND l.shard = @shard AND l.owner = @owner AND l.owner <> '' AND l.epoch = @epoch
	WHERE true
	ON CONFLICT (dedupe_key) DO NOTHING
	RETURNING id, state`

func (s *Store) Enqueue(ctx context.Context, m *store.Message, claim *store.EnqueueClaim) (store.EnqueueResult, error) {
	t := s.now()
	deliverAt := t
	switch {
	case !m.DeliverAt.IsZero():
		deliverAt = m.DeliverAt.UnixMicro()
	case m.Delay > 0:
		deliverAt = t + durMicros(m.Delay)
	}
	var headers, dedupe any
	if m.Headers != nil {
		b, err := json.Marshal(m.Headers)
		if err != nil {
			return store.EnqueueResult{}, fmt.Errorf("sqlite: encode headers: %w", err)
		}
		headers = string(b)
	}
	if m.DedupeKey != "" {
		dedupe = m.DedupeKey
	}
	wantClaim := claim != nil && deliverAt <= t
	var owner string
	var epoch, claimExpires int64
	if wantClaim {
		owner, epoch, claimExpires = claim.Owner, claim.Epoch, t+durMicros(claim.ClaimTTL)
	}
	var id int64
	var state string
	err := s.queryRowW(ctx, enqueueSQL,
		sql.Named("shard", m.Shard), sql.Named("entity_type", m.EntityType), sql.Named("entity_id", m.EntityID),
		sql.Named("tag", m.Tag), sql.Named("payload", blob(m.Payload)), sql.Named("headers", headers),
		sql.Named("dedupe_key", dedupe), sql.Named("reply_to", m.ReplyTo), sql.Named("deliver_at", deliverAt),
		sql.Named("want_claim", wantClaim), sql.Named("owner", owner), sql.Named("epoch", epoch),
		sql.Named("claim_expires", claimExpires), sql.Named("now", t),
	).Scan(&id, &state)
	if err == sql.ErrNoRows && m.DedupeKey != "" {
		return s.duplicate(ctx, m.DedupeKey)
	}
	if err != nil {
		return store.EnqueueResult{}, s.wrap(err, "enqueue")
	}
	m.ID, m.DeliverAt, m.State, m.CreatedAt = id, fromMicros(deliverAt), store.MessageState(state), fromMicros(t)
	res := store.EnqueueResult{ID: id}
	if m.State == store.StateClaimed {
		res.ClaimedEpoch = epoch
	}
	return res, nil
}

// duplicate answers an enqueue whose dedupe key exists: the earlier
// message's id and its final reply, if any.
func (s *Store) duplicate(ctx context.Context, key string) (store.EnqueueResult, error) {
	var id int64
	var rid sql.NullInt64
	var payload, rerr []byte
	var created sql.NullInt64
	err := s.queryRowW(ctx, `SELECT m.id, r.request_id, r.payload, r.error, r.created_at
		FROM voltro_messages AS m LEFT JOIN voltro_replies AS r ON r.request_id = m.id
		WHERE m.dedupe_key = ?`, key).Scan(&id, &rid, &payload, &rerr, &created)
	if err != nil {
		return store.EnqueueResult{}, s.wrap(err, "enqueue: read the duplicate")
	}
	res := store.EnqueueResult{ID: id, Duplicate: true}
	if rid.Valid {
		res.Reply = &store.Reply{RequestID: id, Payload: payload, Error: rerr, CreatedAt: fromMicros(created.Int64)}
	}
	return res, nil
}

// claimSQL claims, in id order, up to @limit deliverable messages of the
// requested types on the requested shards whose lock rows name @owner.
// Deliverable: due, and pending or claimed under a void claim (expired, or
// made at an epoch older than the shard's). The scan walks the partial index
// of open messages in id order, so it stops after @limit matches. (The CAST
// keeps the limit an expression: a bare bound LIMIT makes SQLite re-prepare
// the statement on every new value.)
const claimSQL = `UPDATE voltro_messages SET
		state = 'claimed', claimed_by = @owner, claim_expires_at = @claim_expires, attempts = attempts + 1,
		claim_epoch = (SELECT l.epoch FROM voltro_shard_locks AS l WHERE l.shard = voltro_messages.shard)
	WHERE id IN (
		SELECT m.id FROM voltro_messages AS m INDEXED BY voltro_messages_open
		JOIN voltro_shard_locks AS l ON l.shard = m.shard
		WHERE m.state IN ('pending', 'claimed')
			AND m.deliver_at <= @now
			AND m.shard IN (SELECT value FROM json_each(@shards))
			AND m.entity_type IN (SELECT value FROM json_each(@types))
			AND l.owner = @owner
			AND (m.state = 'pending' OR m.claim_expires_at <= @now OR m.claim_epoch < l.epoch)
		ORDER BY m.id
		LIMIT CAST(@limit AS INTEGER))
	RETURNING ` + messageCols

func (s *Store) Claim(ctx context.Context, req store.ClaimRequest) ([]store.Message, error) {
	if len(req.Types) == 0 || len(req.Shards) == 0 || req.Limit <= 0 || req.Owner == "" {
		return nil, nil
	}
	shards, err := json.Marshal(req.Shards)
	if err != nil {
		return nil, fmt.Errorf("sqlite: encode shards: %w", err)
	}
	types, err := json.Marshal(req.Types)
	if err != nil {
		return nil, fmt.Errorf("sqlite: encode types: %w", err)
	}
	t := s.now()
	rows, err := s.queryW(ctx, claimSQL,
		sql.Named("owner", req.Owner), sql.Named("claim_expires", t+durMicros(req.ClaimTTL)), sql.Named("now", t),
		sql.Named("shards", string(shards)), sql.Named("types", string(types)), sql.Named("limit", req.Limit))
	if err != nil {
		return nil, s.wrap(err, "claim")
	}
	out, err := scanMessages(rows)
	if err != nil {
		return nil, s.wrap(err, "claim")
	}
	slices.SortFunc(out, func(a, b store.Message) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// fencedWhere is the WHERE clause of a write made under a fence: the claim
// is ours at @epoch and the shard's lock row still names us at that epoch.
const fencedWhere = `id = @id AND state = 'claimed' AND claimed_by = @owner AND claim_epoch = @epoch
	AND EXISTS (SELECT 1 FROM voltro_shard_locks AS l
		WHERE l.shard = voltro_messages.shard AND l.owner = @owner AND l.epoch = @epoch)`

func (s *Store) Complete(ctx context.Context, c store.Completion) error {
	return s.finish(ctx, "complete", c.Fence, c.MessageID,
		`UPDATE voltro_messages SET state = 'processed', processed_at = @now, claim_expires_at = 0 WHERE `+fencedWhere,
		nil, blob(c.Payload), blob(c.Error))
}

func (s *Store) DeadLetter(ctx context.Context, f store.Fence, _ string, id int64, lastError string, replyErr []byte) error {
	return s.finish(ctx, "dead-letter", f, id,
		`UPDATE voltro_messages SET state = 'dead', last_error = @last_error, processed_at = @now, claim_expires_at = 0 WHERE `+fencedWhere,
		[]any{sql.Named("last_error", lastError)}, nil, blob(replyErr))
}

// finish runs a fenced final-state update and stores the final reply in one
// transaction; a fence that no longer holds changes nothing.
func (s *Store) finish(ctx context.Context, op string, f store.Fence, id int64, update string, extra []any, payload, replyErr any) (err error) {
	upd, err := s.prep(ctx, s.w, update)
	if err != nil {
		return s.wrap(err, op)
	}
	ins, err := s.prep(ctx, s.w, insertReplySQL)
	if err != nil {
		return s.wrap(err, op)
	}
	t := s.now()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err, op)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	args := append([]any{sql.Named("id", id), sql.Named("owner", f.Owner), sql.Named("epoch", f.Epoch), sql.Named("now", t)}, extra...)
	res, err := tx.StmtContext(ctx, upd).ExecContext(ctx, args...)
	if err != nil {
		return s.wrap(err, op)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.wrap(err, op)
	}
	if n == 0 {
		return s.fenceFailure(ctx, tx, id)
	}
	if _, err := tx.StmtContext(ctx, ins).ExecContext(ctx, id, payload, replyErr, t); err != nil {
		return s.wrap(err, op)
	}
	return s.wrap(tx.Commit(), op)
}

// insertReplySQL stores a final reply unless one exists.
const insertReplySQL = `INSERT INTO voltro_replies (request_id, payload, error, created_at)
	VALUES (?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING`

// fenceFailure explains why a fenced write matched nothing.
func (s *Store) fenceFailure(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id int64) error {
	var state, by string
	var epoch int64
	err := q.QueryRowContext(ctx, `SELECT state, claimed_by, claim_epoch FROM voltro_messages WHERE id = ?`, id).Scan(&state, &by, &epoch)
	if err == sql.ErrNoRows {
		return notFound(id)
	}
	if err != nil {
		return s.wrap(err, "read fenced message")
	}
	return fencedErr(id, state, by, epoch)
}

func (s *Store) Release(ctx context.Context, f store.Fence, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	js, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("sqlite: encode ids: %w", err)
	}
	_, err = s.execW(ctx, `UPDATE voltro_messages SET state = 'pending', claimed_by = '', claim_epoch = 0, claim_expires_at = 0
		WHERE id IN (SELECT value FROM json_each(@ids)) AND state = 'claimed' AND claimed_by = @owner AND claim_epoch = @epoch`,
		sql.Named("ids", string(js)), sql.Named("owner", f.Owner), sql.Named("epoch", f.Epoch))
	return s.wrap(err, "release")
}

func (s *Store) RecordAttempt(ctx context.Context, f store.Fence, id int64, lastError string) error {
	res, err := s.execW(ctx, `UPDATE voltro_messages SET attempts = attempts + 1, last_error = @last_error
		WHERE id = @id AND state = 'claimed' AND claimed_by = @owner AND claim_epoch = @epoch`,
		sql.Named("last_error", lastError), sql.Named("id", id), sql.Named("owner", f.Owner), sql.Named("epoch", f.Epoch))
	if err != nil {
		return s.wrap(err, "record attempt")
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.wrap(err, "record attempt")
	} else if n == 0 {
		return s.fenceFailure(ctx, s.w, id)
	}
	return nil
}

func (s *Store) ReplayDead(ctx context.Context, id int64) (err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err, "replay dead")
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	res, err := tx.ExecContext(ctx, `UPDATE voltro_messages SET state = 'pending', attempts = 0, claimed_by = '', claim_epoch = 0,
		claim_expires_at = 0, processed_at = 0, deliver_at = ? WHERE id = ? AND state = 'dead'`, s.now(), id)
	if err != nil {
		return s.wrap(err, "replay dead")
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.wrap(err, "replay dead")
	} else if n == 0 {
		return errs.New(errs.CodeNotFound, "no dead message %d", id)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM voltro_replies WHERE request_id = ?`, id); err != nil {
		return s.wrap(err, "replay dead")
	}
	return s.wrap(tx.Commit(), "replay dead")
}

func (s *Store) ExtendClaims(ctx context.Context, owner string, ttl time.Duration) error {
	_, err := s.execW(ctx, `UPDATE voltro_messages SET claim_expires_at = ? WHERE state = 'claimed' AND claimed_by = ?`,
		s.now()+durMicros(ttl), owner)
	return s.wrap(err, "extend claims")
}

// blob stores an empty byte slice as NULL.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
