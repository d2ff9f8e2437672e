// Claims and everything fenced by them: Claim, Complete, DeadLetter, Release,
// RecordAttempt, ReplayDead and ExtendClaims.

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// claimTx runs in READ COMMITTED: the locking read takes no gap locks, so
// enqueues into the same shard never wait for a claim, and it lets go of the
// rows it read that do not match. Rows that match but fall past the LIMIT
// (the sort comes after the read) stay locked until the claim commits: a
// concurrent claim of the same shards skips them and returns fewer messages.
// The read is bounded by the due backlog of the caller's shards (index
// idx_messages_claim: shard, state, deliver_at), never by processed rows,
// sleeping messages or other runners' shards.
var claimTx = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// Claim reads the epochs of the caller's shards from the ledger, locks up to
// Limit deliverable messages of those shards in id order (skipping rows
// another claim has locked, where the server can), and marks them claimed at
// the shard's epoch. A claim is void when it expired or was made under an
// older epoch than the shard's current one.
func (s *Store) Claim(ctx context.Context, req store.ClaimRequest) ([]store.Message, error) {
	if len(req.Types) == 0 || len(req.Shards) == 0 || req.Limit <= 0 {
		return nil, nil
	}
	lock := "FOR UPDATE"
	if s.server.skipLocked {
		lock = "FOR UPDATE SKIP LOCKED"
	}
	// An idle runner polls: look first, outside a transaction, whether
	// anything of ours could be due — one statement instead of a claim
	// transaction's four when the answer is no.
	var found int
	probe := `SELECT 1 FROM voltro_messages WHERE shard IN (` + placeholders(len(req.Shards)) + `)
		AND entity_type IN (` + placeholders(len(req.Types)) + `) AND deliver_at <= UTC_TIMESTAMP(6)
		AND state IN ('pending', 'claimed') LIMIT 1`
	err := s.db.QueryRowContext(ctx, probe, append(anys(req.Shards), anys(req.Types)...)...).Scan(&found)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("claim", err)
	}
	var out []store.Message
	err = s.inTx(ctx, claimTx, func(tx *sql.Tx) error {
		out = out[:0]
		epochs, err := ownedEpochs(ctx, tx, req.Owner, req.Shards)
		if err != nil || len(epochs) == 0 {
			return err
		}
		owned := make([]any, 0, len(epochs))
		for sh := range epochs {
			owned = append(owned, sh)
		}
		args := append(owned, anys(req.Types)...)
		args = append(args, req.Limit)
		rows, err := tx.QueryContext(ctx, "SELECT "+messageCols+`, UTC_TIMESTAMP(6) FROM voltro_messages m
			WHERE shard IN (`+placeholders(len(owned))+`) AND entity_type IN (`+placeholders(len(req.Types))+`)
			AND deliver_at <= UTC_TIMESTAMP(6)
			AND (state = 'pending' OR (state = 'claimed' AND (claim_expires_at <= UTC_TIMESTAMP(6)
				OR claim_epoch < (SELECT l.epoch FROM voltro_shard_locks l WHERE l.shard = m.shard))))
			ORDER BY id LIMIT ? `+lock, args...)
		if err != nil {
			return err
		}
		var now time.Time
		for rows.Next() {
			m, err := scanMessage(rows, &now)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, m)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil || len(out) == 0 {
			return err
		}
		exp := now.Add(req.ClaimTTL)
		byEpoch := map[int64][]any{}
		for i := range out {
			m := &out[i]
			e := epochs[m.Shard]
			byEpoch[e] = append(byEpoch[e], m.ID)
			m.State, m.ClaimedBy, m.ClaimEpoch, m.ClaimExpiresAt = store.StateClaimed, req.Owner, e, exp
			m.Attempts++
		}
		for e, ids := range byEpoch {
			_, err := tx.ExecContext(ctx, `UPDATE voltro_messages SET state = 'claimed', claimed_by = ?, claim_epoch = ?,
				claim_expires_at = ?, attempts = attempts + 1 WHERE id IN (`+placeholders(len(ids))+`)`,
				append([]any{req.Owner, e, exp}, ids...)...)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapErr("claim", err)
	}
	return out, nil
}

// ownedEpochs returns shard -> epoch for the shards whose ledger row names owner.
func ownedEpochs(ctx context.Context, tx *sql.Tx, owner string, shards []string) (map[string]int64, error) {
	if owner == "" {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, "SELECT shard, epoch FROM voltro_shard_locks WHERE owner = ? AND shard IN ("+
		placeholders(len(shards))+")", append([]any{owner}, anys(shards)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var sh string
		var e int64
		if err := rows.Scan(&sh, &e); err != nil {
			return nil, err
		}
		out[sh] = e
	}
	return out, rows.Err()
}

func (s *Store) Complete(ctx context.Context, c store.Completion) error {
	return s.finish(ctx, c.MessageID, c.Fence, store.StateProcessed, nil, c.Payload, c.Error)
}

func (s *Store) DeadLetter(ctx context.Context, f store.Fence, _ string, id int64, lastError string, replyErr []byte) error {
	return s.finish(ctx, id, f, store.StateDead, &lastError, nil, replyErr)
}

// finish moves a claimed message to processed or dead and stores its final
// reply in one transaction, only while the claim is (owner, epoch) and the
// shard's ledger row still names that owner at that epoch. The UPDATE also
// makes the fence write (see fenceWrite): it bumps the ledger row it joins,
// so a takeover here waits for the commit and one on another Galera node
// conflicts with it at certification.
func (s *Store) finish(ctx context.Context, id int64, f store.Fence, state store.MessageState, lastError *string, payload, replyErr []byte) error {
	set := "l.fence_writes = l.fence_writes + 1, m.state = ?, m.processed_at = UTC_TIMESTAMP(6), m.claim_expires_at = NULL"
	args := []any{string(state)}
	if lastError != nil {
		set += ", m.last_error = ?"
		args = append(args, *lastError)
	}
	args = append(args, id, f.Owner, f.Epoch, f.Owner, f.Epoch)
	update := `UPDATE voltro_messages m JOIN voltro_shard_locks l ON l.shard = m.shard
		SET ` + set + ` WHERE m.id = ? AND m.state = 'claimed' AND m.claimed_by = ? AND m.claim_epoch = ?
		AND l.owner = ? AND l.epoch = ?`
	// Not on Galera: a write-set from another node can abort a transaction
	// halfway through a multi-statement query and MariaDB 10.11 then
	// commits the statements after the abort. There, a plain transaction.
	if s.batched() {
		// One round trip. The reply is inserted only if the message is now
		// in its final state under this claim: when the UPDATE was fenced,
		// the INSERT finds no row (or, for a second Complete of our own, a
		// reply that already exists) and the transaction commits nothing.
		n, err := s.execBatch(ctx, "START TRANSACTION; "+update+`;
			INSERT INTO voltro_replies (request_id, payload, error, created_at)
			SELECT id, ?, ?, UTC_TIMESTAMP(6) FROM voltro_messages
			WHERE id = ? AND state = ? AND claimed_by = ? AND claim_epoch = ?
			ON DUPLICATE KEY UPDATE request_id = voltro_replies.request_id;
			COMMIT`, append(args, payload, replyErr, id, string(state), f.Owner, f.Epoch)...)
		if err != nil {
			return wrapErr("finish message", err)
		}
		if len(n) < 2 || n[1] == 0 {
			return wrapErr("finish message", fencedOrMissing(ctx, s.db, id))
		}
		return nil
	}
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, update, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fencedOrMissing(ctx, tx, id)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO voltro_replies (request_id, payload, error, created_at)
			VALUES (?, ?, ?, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE request_id = request_id`, id, payload, replyErr)
		s.pauseBeforeCommit(ctx, err)
		return err
	})
	return wrapErr("finish message", err)
}

// fencedOrMissing explains why a fenced write matched nothing.
func fencedOrMissing(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id int64) error {
	var state, by string
	var epoch int64
	err := q.QueryRowContext(ctx, "SELECT state, claimed_by, claim_epoch FROM voltro_messages WHERE id = ?", id).Scan(&state, &by, &epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return errs.New(errs.CodeNotFound, "message %d not found", id)
	}
	if err != nil {
		return err
	}
	return errs.New(errs.CodeFenced, "message %d: claim no longer held (state %s, claimed by %q at epoch %d)", id, state, by, epoch)
}

func (s *Store) Release(ctx context.Context, f store.Fence, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	args := append([]any{f.Owner, f.Epoch}, anys(ids)...)
	_, err := s.exec(ctx, `UPDATE voltro_messages SET state = 'pending', claimed_by = '', claim_epoch = 0, claim_expires_at = NULL
		WHERE state = 'claimed' AND claimed_by = ? AND claim_epoch = ? AND id IN (`+placeholders(len(ids))+`)`, args...)
	return wrapErr("release claims", err)
}

func (s *Store) RecordAttempt(ctx context.Context, f store.Fence, id int64, lastError string) error {
	res, err := s.exec(ctx, `UPDATE voltro_messages SET attempts = attempts + 1, last_error = ?
		WHERE id = ? AND state = 'claimed' AND claimed_by = ? AND claim_epoch = ?`, lastError, id, f.Owner, f.Epoch)
	if err != nil {
		return wrapErr("record attempt", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return wrapErr("record attempt", fencedOrMissing(ctx, s.db, id))
	}
	return nil
}

func (s *Store) ReplayDead(ctx context.Context, id int64) error {
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE voltro_messages SET state = 'pending', attempts = 0, claimed_by = '',
			claim_epoch = 0, claim_expires_at = NULL, processed_at = NULL, deliver_at = UTC_TIMESTAMP(6)
			WHERE id = ? AND state = 'dead'`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.New(errs.CodeNotFound, "no dead message %d", id)
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM voltro_replies WHERE request_id = ?", id)
		return err
	})
	return wrapErr("replay dead message", err)
}

func (s *Store) ExtendClaims(ctx context.Context, owner string, ttl time.Duration) error {
	_, err := s.exec(ctx, `UPDATE voltro_messages SET claim_expires_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))
		WHERE state = 'claimed' AND claimed_by = ?`, micros(ttl), owner)
	return wrapErr("extend claims", err)
}
