// Message writes: enqueue (deduplicated, optionally claimed at insert),
// claim, and the fenced transitions of a claimed message. Each is one
// statement, and one round trip, on the happy path.

package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// maxDedupeKey is the longest dedupe key stored verbatim; longer keys are
// stored as their SHA-256 so the unique index stays small.
const maxDedupeKey = 200

func dedupeKey(k string) *string {
	if k == "" {
		return nil
	}
	if len(k) > maxDedupeKey {
		sum := sha256.Sum256([]byte(k))
		k = "sha256:" + hex.EncodeToString(sum[:])
	}
	return &k
}

// enqueueInsert inserts the message, claimed for the caller when its lock
// row names it at the given epoch and the message is due. Its RETURNING list
// notifies a message left pending only: one claimed at insert is nobody
// else's to take.
const enqueueInsert = `INSERT INTO voltro_messages (shard, entity_type, entity_id, tag, payload, headers, dedupe_key,
		reply_to, deliver_at, state, claimed_by, claim_epoch, claim_expires_at, attempts, created_at)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, d.at,
		CASE WHEN c.epoch IS NULL THEN 'pending' ELSE 'claimed' END,
		CASE WHEN c.epoch IS NULL THEN '' ELSE $11 END,
		coalesce(c.epoch, 0),
		CASE WHEN c.epoch IS NULL THEN NULL ELSE now() + $13::bigint * interval '1 microsecond' END,
		CASE WHEN c.epoch IS NULL THEN 0 ELSE 1 END,
		now()
	FROM (SELECT coalesce($9::timestamptz, now() + $10::bigint * interval '1 microsecond') AS at) d
	LEFT JOIN LATERAL (
		SELECT l.epoch FROM voltro_shard_locks l
		WHERE $11::text <> '' AND l.shard = $1 AND l.owner = $11 AND l.epoch = $12 AND d.at <= now()
	) c ON true`

const enqueueReturning = ` RETURNING id, deliver_at, state, created_at, claim_epoch,
	CASE WHEN state = 'pending' AND NOT ` + senderOwns + ` THEN (SELECT 1 FROM pg_notify($14, 'm ' || id || ' ' || $1)) END AS notified`

// senderOwns: the claim's owner holds the message's shard at the claim's
// epoch, so a message it left pending (one not due yet) needs no NOTIFY:
// the sender wakes its own delivery loop, and should the shard move, the
// next owner reads the backlog when it takes the shard.
const senderOwns = `EXISTS (SELECT 1 FROM voltro_shard_locks l
		WHERE $11::text <> '' AND l.shard = $1 AND l.owner = $11 AND l.epoch = $12)`

// sqlEnqueue is the statement of a message without a dedupe key.
const sqlEnqueue = enqueueInsert + enqueueReturning

// sqlEnqueueDedupe inserts unless the dedupe key exists, and then reads the
// earlier message with its reply instead.
const sqlEnqueueDedupe = `WITH ins AS (` + enqueueInsert + `
		ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING` + enqueueReturning + `
	)
	SELECT id, false, deliver_at, state, created_at, claim_epoch, NULL::bytea, NULL::bytea, NULL::timestamptz, notified
	FROM ins
	UNION ALL
	SELECT m.id, true, m.deliver_at, m.state, m.created_at, 0, r.payload, r.error, r.created_at, NULL
	FROM voltro_messages m LEFT JOIN voltro_replies r ON r.request_id = m.id
	WHERE m.dedupe_key = $7 AND NOT EXISTS (SELECT 1 FROM ins)`

// sqlDuplicate reads the message holding a dedupe key in a fresh snapshot
// (the enqueue statement cannot see a row committed while it waited).
const sqlDuplicate = `SELECT m.id, r.payload, r.error, r.created_at
	FROM voltro_messages m LEFT JOIN voltro_replies r ON r.request_id = m.id
	WHERE m.dedupe_key = $1`

func (s *Store) Enqueue(ctx context.Context, m *store.Message, claim *store.EnqueueClaim) (store.EnqueueResult, error) {
	var headers []byte
	if len(m.Headers) > 0 {
		b, err := json.Marshal(m.Headers)
		if err != nil {
			return store.EnqueueResult{}, errs.Wrap(errs.CodeInvalidArgument, err, "message headers")
		}
		headers = b
	}
	var deliverAt *time.Time
	if !m.DeliverAt.IsZero() {
		deliverAt = &m.DeliverAt
	}
	var claimOwner string
	var claimEpoch, claimTTL int64
	if claim != nil {
		claimOwner, claimEpoch, claimTTL = claim.Owner, claim.Epoch, micros(claim.ClaimTTL)
	}
	key := dedupeKey(m.DedupeKey)
	var (
		res                   store.EnqueueResult
		at, created, rCreated *time.Time
		state                 string
		rPayload, rErr        []byte
		notified              *int64
	)
	args := []any{m.Shard, m.EntityType, m.EntityID, m.Tag, m.Payload, headers, key, m.ReplyTo,
		deliverAt, micros(m.Delay), claimOwner, claimEpoch, claimTTL, s.channel}
	var err error
	if key == nil {
		err = s.pool.QueryRow(ctx, sqlEnqueue, args...).Scan(&res.ID, &at, &state, &created, &res.ClaimedEpoch, &notified)
	} else {
		err = s.pool.QueryRow(ctx, sqlEnqueueDedupe, args...).
			Scan(&res.ID, &res.Duplicate, &at, &state, &created, &res.ClaimedEpoch, &rPayload, &rErr, &rCreated, &notified)
	}
	if errors.Is(err, pgx.ErrNoRows) && key != nil {
		// The earlier message committed while our insert waited on it.
		res = store.EnqueueResult{Duplicate: true}
		err = s.pool.QueryRow(ctx, sqlDuplicate, *key).Scan(&res.ID, &rPayload, &rErr, &rCreated)
	}
	if err != nil {
		return store.EnqueueResult{}, wrapErr("enqueue", err)
	}
	if res.Duplicate {
		res.ClaimedEpoch = 0
		if rCreated != nil {
			res.Reply = &store.Reply{RequestID: res.ID, Payload: rPayload, Error: rErr, CreatedAt: *rCreated}
		}
		return res, nil
	}
	m.ID, m.State = res.ID, store.MessageState(state)
	if at != nil {
		m.DeliverAt = *at
	}
	if created != nil {
		m.CreatedAt = *created
	}
	return res, nil
}

// msgCols is the column list scanMessage reads, in order.
const msgCols = `id, shard, entity_type, entity_id, tag, payload, headers, dedupe_key, reply_to, deliver_at,
	state, claimed_by, claim_epoch, claim_expires_at, attempts, last_error, created_at, processed_at`

func scanMessage(row pgx.CollectableRow) (store.Message, error) {
	var (
		m                store.Message
		headers          []byte
		key              *string
		claimExp, procAt *time.Time
		state            string
	)
	err := row.Scan(&m.ID, &m.Shard, &m.EntityType, &m.EntityID, &m.Tag, &m.Payload, &headers, &key, &m.ReplyTo,
		&m.DeliverAt, &state, &m.ClaimedBy, &m.ClaimEpoch, &claimExp, &m.Attempts, &m.LastError, &m.CreatedAt, &procAt)
	if err != nil {
		return m, err
	}
	m.State = store.MessageState(state)
	if len(headers) > 0 {
		if err := json.Unmarshal(headers, &m.Headers); err != nil {
			return m, err
		}
	}
	if key != nil {
		m.DedupeKey = *key
	}
	if claimExp != nil {
		m.ClaimExpiresAt = *claimExp
	}
	if procAt != nil {
		m.ProcessedAt = *procAt
	}
	return m, nil
}

// sqlClaim takes due messages of owned shards in id order. Candidates come
// from an ordered index scan per shard that stops after $4 rows, so a large
// backlog costs nothing extra; the lock step re-checks each candidate (a
// concurrent claim may have made it live since the snapshot) and SKIP LOCKED
// keeps concurrent claimers apart.
const sqlClaim = `WITH own AS (
		SELECT shard, epoch FROM voltro_shard_locks
		WHERE shard = ANY($2::text[]) AND owner = $1 AND $1 <> ''
	), cand AS (
		SELECT x.id, own.epoch FROM own CROSS JOIN LATERAL (
			SELECT m.id FROM voltro_messages m
			WHERE m.shard = own.shard AND m.state IN ('pending', 'claimed')
				AND m.entity_type = ANY($3::text[]) AND m.deliver_at <= now()
				AND (m.state = 'pending' OR m.claim_expires_at <= now() OR m.claim_epoch < own.epoch)
			ORDER BY m.id
			LIMIT $4
		) x
		ORDER BY x.id
		LIMIT $4
	), c AS (
		SELECT m.id, cand.epoch FROM cand JOIN voltro_messages m ON m.id = cand.id
		WHERE m.state IN ('pending', 'claimed') AND m.deliver_at <= now()
			AND (m.state = 'pending' OR m.claim_expires_at <= now() OR m.claim_epoch < cand.epoch)
		FOR UPDATE OF m SKIP LOCKED
	)
	UPDATE voltro_messages m SET state = 'claimed', claimed_by = $1, claim_epoch = c.epoch,
		claim_expires_at = now() + $5::bigint * interval '1 microsecond', attempts = m.attempts + 1
	FROM c WHERE m.id = c.id
	RETURNING m.id, m.shard, m.entity_type, m.entity_id, m.tag, m.payload, m.headers, m.dedupe_key, m.reply_to,
		m.deliver_at, m.state, m.claimed_by, m.claim_epoch, m.claim_expires_at, m.attempts, m.last_error,
		m.created_at, m.processed_at`

func (s *Store) Claim(ctx context.Context, req store.ClaimRequest) ([]store.Message, error) {
	if len(req.Types) == 0 || len(req.Shards) == 0 || req.Limit <= 0 || req.Owner == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, sqlClaim, req.Owner, req.Shards, req.Types, req.Limit, micros(req.ClaimTTL))
	if err != nil {
		return nil, wrapErr("claim", err)
	}
	out, err := pgx.CollectRows(rows, scanMessage)
	if err != nil {
		return nil, wrapErr("claim", err)
	}
	slices.SortFunc(out, func(a, b store.Message) int { return compareInt64(a.ID, b.ID) })
	return out, nil
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sqlFinish moves a live, fenced claim to processed or dead and stores the
// final reply, in one statement. $6 is the final state; $7 the last error
// (kept as is when NULL). The fence read locks the ledger row (FOR SHARE),
// as sqlRunWrite's does.
//
// It notifies the reply only when the waiter (reply_to) is not the runner
// finishing the message: that runner wakes its own waiters in process. The
// skip matters for throughput: PostgreSQL serialises the commits of all
// notifying transactions server-wide (a heavyweight lock held until after
// the WAL flush), so a NOTIFY on every completion would cap completions at
// one fsync each, for every database on the server.
const sqlFinish = `WITH u AS (
		UPDATE voltro_messages m SET state = $6, processed_at = now(), claim_expires_at = NULL,
			last_error = coalesce($7, m.last_error)
		WHERE m.id = $1 AND m.shard = $9 AND m.state = 'claimed' AND m.claimed_by = $2 AND m.claim_epoch = $3
			AND EXISTS (SELECT 1 FROM voltro_shard_locks l WHERE l.shard = $9 AND l.owner = $2 AND l.epoch = $3 FOR SHARE)
		RETURNING m.id, m.reply_to
	), r AS (
		INSERT INTO voltro_replies (request_id, payload, error, created_at)
		SELECT id, $4, $5, now() FROM u
		ON CONFLICT (request_id) DO NOTHING
	)
	SELECT CASE WHEN reply_to <> '' AND reply_to <> $2 THEN (SELECT 1 FROM pg_notify($8, 'r ' || id)) END FROM u`

// Complete takes c.Shard as the message's shard: the lock row is checked as
// an uncorrelated condition on that shard, which PostgreSQL evaluates once
// (joining the lock row on the message's own shard made the statement cost
// about half as much CPU again). A shard that is not the message's is an
// invalid argument; an empty one costs a lookup.
func (s *Store) Complete(ctx context.Context, c store.Completion) error {
	return s.finish(ctx, "complete", c.MessageID, c.Shard, c.Fence, store.StateProcessed, nil, c.Payload, c.Error)
}

func (s *Store) DeadLetter(ctx context.Context, f store.Fence, shard string, id int64, lastError string, replyErr []byte) error {
	return s.finish(ctx, "dead-letter", id, shard, f, store.StateDead, &lastError, nil, replyErr)
}

func (s *Store) finish(ctx context.Context, op string, id int64, shard string, f store.Fence, state store.MessageState, lastError *string, payload, replyErr []byte) error {
	if shard == "" {
		// Not given: read it (one more round trip).
		if err := s.pool.QueryRow(ctx, `SELECT shard FROM voltro_messages WHERE id = $1`, id).Scan(&shard); errors.Is(err, pgx.ErrNoRows) {
			return fencedOrMissing(id, false, "", "", 0)
		} else if err != nil {
			return wrapErr(op, err)
		}
	}
	var notified *int64
	err := s.pool.QueryRow(ctx, sqlFinish, id, f.Owner, f.Epoch, payload, replyErr, string(state), lastError, s.channel, shard).Scan(&notified)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.whyFenced(ctx, op, id, shard)
	}
	return wrapErr(op, err)
}

// whyFenced reads message id after a fenced write to build the error;
// shard, when not empty, is the shard the caller named.
func (s *Store) whyFenced(ctx context.Context, op string, id int64, shard string) error {
	var state, by, actual string
	var epoch int64
	err := s.pool.QueryRow(ctx, `SELECT state, claimed_by, claim_epoch, shard FROM voltro_messages WHERE id = $1`, id).
		Scan(&state, &by, &epoch, &actual)
	if errors.Is(err, pgx.ErrNoRows) {
		return fencedOrMissing(id, false, "", "", 0)
	}
	if err != nil {
		return wrapErr(op, err)
	}
	if shard != "" && shard != actual {
		return errs.New(errs.CodeInvalidArgument, "message %d is on shard %s, not %s", id, actual, shard)
	}
	return fencedOrMissing(id, true, state, by, epoch)
}

// Release returns the claims made under f to pending and wakes the shards'
// owners (the caller usually lost the shard, or is shutting down).
func (s *Store) Release(ctx context.Context, f store.Fence, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `WITH u AS (
			UPDATE voltro_messages SET state = 'pending', claimed_by = '', claim_epoch = 0, claim_expires_at = NULL
			WHERE id = ANY($3::bigint[]) AND state = 'claimed' AND claimed_by = $1 AND claim_epoch = $2
			RETURNING id, shard
		)
		SELECT pg_notify($4, 'm ' || min(id) || ' ' || shard) FROM u GROUP BY shard`, f.Owner, f.Epoch, ids, s.channel)
	return wrapErr("release", err)
}

func (s *Store) RecordAttempt(ctx context.Context, f store.Fence, id int64, lastError string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE voltro_messages SET attempts = attempts + 1, last_error = $4
		WHERE id = $1 AND state = 'claimed' AND claimed_by = $2 AND claim_epoch = $3`, id, f.Owner, f.Epoch, lastError)
	if err != nil {
		return wrapErr("record attempt", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return s.whyFenced(ctx, "record attempt", id, "")
}

func (s *Store) ReplayDead(ctx context.Context, id int64) error {
	var n int64
	err := s.pool.QueryRow(ctx, `WITH u AS (
			UPDATE voltro_messages SET state = 'pending', attempts = 0, claimed_by = '', claim_epoch = 0,
				claim_expires_at = NULL, processed_at = NULL, deliver_at = now()
			WHERE id = $1 AND state = 'dead'
			RETURNING id, shard
		), d AS (
			DELETE FROM voltro_replies WHERE request_id IN (SELECT id FROM u)
		), n AS (
			SELECT pg_notify($2, 'm ' || u.id || ' ' || u.shard) FROM u
		)
		SELECT (SELECT count(*) FROM u) + 0 * (SELECT count(*) FROM n)`, id, s.channel).Scan(&n)
	if err != nil {
		return wrapErr("replay dead", err)
	}
	if n == 0 {
		return errs.New(errs.CodeNotFound, "no dead message %d", id)
	}
	return nil
}

// ExtendClaims skips the claims another transaction has locked: those are
// being completed or released (a group-committed batch of run writes holds
// several until it commits, and taking them in another order deadlocked
// with it), and a claim skipped once is extended on the next heartbeat,
// long before it expires.
func (s *Store) ExtendClaims(ctx context.Context, owner string, ttl time.Duration) error {
	_, err := s.pool.Exec(ctx, `UPDATE voltro_messages m SET claim_expires_at = now() + $2::bigint * interval '1 microsecond'
		FROM (SELECT id FROM voltro_messages WHERE state = 'claimed' AND claimed_by = $1 FOR UPDATE SKIP LOCKED) c
		WHERE m.id = c.id`, owner, micros(ttl))
	return wrapErr("extend claims", err)
}
