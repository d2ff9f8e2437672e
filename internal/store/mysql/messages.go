// Messages in and out: Enqueue (dedupe, optional claim at insert), reading
// messages and replies.

package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

const insertCols = `shard, entity_type, entity_id, tag, payload, headers, dedupe_key, dedupe_full, reply_to,
	deliver_at, state, claimed_by, claim_epoch, claim_expires_at, attempts, created_at`

// deliverAtSQL is the message's due time: the absolute DeliverAt if given,
// else the database's now plus the delay.
const deliverAtSQL = "COALESCE(?, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)))"

// enqueuePlain inserts a pending message.
const enqueuePlain = `INSERT INTO voltro_messages (` + insertCols + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ` + deliverAtSQL + `, 'pending', '', 0, NULL, 0, UTC_TIMESTAMP(6))`

// enqueueClaimed inserts the message claimed by the sender when the ledger
// names it at its epoch and the message is due, pending otherwise; one
// statement, so the ledger check and the insert see the same row.
const enqueueClaimed = `INSERT INTO voltro_messages (` + insertCols + `)
	SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, x.d,
		IF(x.ok, 'claimed', 'pending'), IF(x.ok, ?, ''), IF(x.ok, ?, 0),
		IF(x.ok, TIMESTAMPADD(MICROSECOND, ?, x.now), NULL), IF(x.ok, 1, 0), x.now
	FROM (SELECT n.now, n.d, n.d <= n.now AND EXISTS (
			SELECT 1 FROM voltro_shard_locks WHERE shard = ? AND owner = ? AND epoch = ?) AS ok
		FROM (SELECT UTC_TIMESTAMP(6) AS now, ` + deliverAtSQL + ` AS d) n) x`

// enqueueWhere inserts a pending message like enqueuePlain, but only when
// the condition appended to it holds.
const enqueueWhere = `INSERT INTO voltro_messages (` + insertCols + `)
	SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ` + deliverAtSQL + `, 'pending', '', 0, NULL, 0, UTC_TIMESTAMP(6) FROM DUAL WHERE `

// enqueueStmt is Enqueue's statement for m: plain, claimed at insert
// (claim != nil), or plain under a condition (where != "", with whereArgs).
// dkey is the encoded dedupe key, nil if none.
func enqueueStmt(m *store.Message, claim *store.EnqueueClaim, where string, whereArgs ...any) (query string, args []any, dkey any, err error) {
	var headers any
	if m.Headers != nil {
		b, err := json.Marshal(m.Headers)
		if err != nil {
			return "", nil, nil, errs.Wrap(errs.CodeInvalidArgument, err, "message headers")
		}
		headers = string(b)
	}
	dkey, dfull := encodeDedupe(m.DedupeKey)
	var deliverAt any
	var delay int64
	if !m.DeliverAt.IsZero() {
		deliverAt = m.DeliverAt.UTC()
	} else if m.Delay > 0 {
		delay = micros(m.Delay)
	}
	args = []any{m.Shard, m.EntityType, m.EntityID, m.Tag, m.Payload, headers, dkey, dfull, m.ReplyTo}
	switch {
	case claim != nil:
		query = enqueueClaimed
		args = append(args, claim.Owner, claim.Epoch, micros(claim.ClaimTTL), m.Shard, claim.Owner, claim.Epoch, deliverAt, delay)
	case where != "":
		query = enqueueWhere + where
		args = append(append(args, deliverAt, delay), whereArgs...)
	default:
		query = enqueuePlain
		args = append(args, deliverAt, delay)
	}
	return query, args, dkey, nil
}

func (s *Store) Enqueue(ctx context.Context, m *store.Message, claim *store.EnqueueClaim) (store.EnqueueResult, error) {
	query, args, dkey, err := enqueueStmt(m, claim, "")
	if err != nil {
		return store.EnqueueResult{}, err
	}

	var res store.EnqueueResult
	var state string
	err = s.retry(ctx, func() error {
		if s.returning() {
			return s.db.QueryRowContext(ctx, query+" RETURNING id, deliver_at, created_at, state", args...).
				Scan(&res.ID, &m.DeliverAt, &m.CreatedAt, &state)
		}
		r, err := s.db.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		res.ID, err = r.LastInsertId()
		return err
	})
	if isDuplicate(err) && dkey != nil {
		return s.duplicate(ctx, dkey)
	}
	if err == nil && !s.returning() {
		// outside the retry: the row is in, only its values are read back
		err = s.db.QueryRowContext(ctx, "SELECT deliver_at, created_at, state FROM voltro_messages WHERE id = ?", res.ID).
			Scan(&m.DeliverAt, &m.CreatedAt, &state)
	}
	if err != nil {
		return store.EnqueueResult{}, wrapErr("enqueue", err)
	}
	m.ID, m.State = res.ID, store.MessageState(state)
	if m.State == store.StateClaimed {
		res.ClaimedEpoch = claim.Epoch
	}
	return res, nil
}

// duplicate answers an Enqueue whose dedupe key exists: the earlier id and
// its final reply, if any.
func (s *Store) duplicate(ctx context.Context, dkey any) (store.EnqueueResult, error) {
	res := store.EnqueueResult{Duplicate: true}
	if err := s.db.QueryRowContext(ctx, "SELECT id FROM voltro_messages WHERE dedupe_key = ?", dkey).Scan(&res.ID); err != nil {
		return store.EnqueueResult{}, wrapErr("enqueue: read the duplicate", err)
	}
	r, err := s.GetReply(ctx, res.ID)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	res.Reply = r
	return res, nil
}

// messageCols is what scanMessage reads, in order.
const messageCols = `id, shard, entity_type, entity_id, tag, payload, headers, COALESCE(dedupe_full, dedupe_key),
	reply_to, deliver_at, state, claimed_by, claim_epoch, claim_expires_at, attempts, last_error, created_at, processed_at`

type scanner interface{ Scan(dest ...any) error }

// scanMessage reads messageCols, plus any extra destinations after them.
func scanMessage(r scanner, extra ...any) (store.Message, error) {
	var m store.Message
	var headers, dedupe, lastError sql.NullString
	var claimExp, processed sql.NullTime
	var state string
	dest := append([]any{&m.ID, &m.Shard, &m.EntityType, &m.EntityID, &m.Tag, &m.Payload, &headers, &dedupe,
		&m.ReplyTo, &m.DeliverAt, &state, &m.ClaimedBy, &m.ClaimEpoch, &claimExp, &m.Attempts, &lastError,
		&m.CreatedAt, &processed}, extra...)
	if err := r.Scan(dest...); err != nil {
		return m, err
	}
	if headers.Valid && headers.String != "" {
		if err := json.Unmarshal([]byte(headers.String), &m.Headers); err != nil {
			return m, errs.Wrap(errs.CodeDecode, err, "message headers")
		}
	}
	m.DedupeKey, m.LastError = dedupe.String, lastError.String
	m.State = store.MessageState(state)
	m.ClaimExpiresAt, m.ProcessedAt = timeOf(claimExp), timeOf(processed)
	return m, nil
}

func (s *Store) GetMessage(ctx context.Context, id int64) (store.Message, error) {
	m, err := scanMessage(s.db.QueryRowContext(ctx, "SELECT "+messageCols+" FROM voltro_messages WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Message{}, errs.New(errs.CodeNotFound, "message %d not found", id)
	}
	if err != nil {
		return store.Message{}, wrapErr("get message", err)
	}
	return m, nil
}

func (s *Store) ListMessages(ctx context.Context, f store.MessageFilter) ([]store.Message, error) {
	var where []string
	var args []any
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, string(f.State))
	}
	if f.EntityType != "" {
		where, args = append(where, "entity_type = ?"), append(args, f.EntityType)
	}
	if f.EntityID != "" {
		where, args = append(where, "entity_id = ?"), append(args, f.EntityID)
	}
	q := "SELECT " + messageCols + " FROM voltro_messages"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id"
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrapErr("list messages", err)
	}
	defer rows.Close()
	var out []store.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, wrapErr("list messages", err)
		}
		out = append(out, m)
	}
	return out, wrapErr("list messages", rows.Err())
}

func (s *Store) GetReply(ctx context.Context, requestID int64) (*store.Reply, error) {
	r := &store.Reply{RequestID: requestID}
	err := s.db.QueryRowContext(ctx, "SELECT payload, error, created_at FROM voltro_replies WHERE request_id = ?", requestID).
		Scan(&r.Payload, &r.Error, &r.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("get reply", err)
	}
	return r, nil
}
