// Message reads: single messages and listings, replies, the next delivery
// time of an owner, and drain statistics, all judged by the database clock.

package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func (s *Store) GetMessage(ctx context.Context, id int64) (store.Message, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+msgCols+` FROM voltro_messages WHERE id = $1`, id)
	if err != nil {
		return store.Message{}, wrapErr("get message", err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, scanMessage)
	if errors.Is(err, pgx.ErrNoRows) {
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
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.State != "" {
		add("state = ?", string(f.State))
	}
	if f.EntityType != "" {
		add("entity_type = ?", f.EntityType)
	}
	if f.EntityID != "" {
		add("entity_id = ?", f.EntityID)
	}
	q := `SELECT ` + msgCols + ` FROM voltro_messages`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += ` LIMIT $` + strconv.Itoa(len(args))
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, wrapErr("list messages", err)
	}
	out, err := pgx.CollectRows(rows, scanMessage)
	if err != nil {
		return nil, wrapErr("list messages", err)
	}
	return out, nil
}

func (s *Store) GetReply(ctx context.Context, requestID int64) (*store.Reply, error) {
	r := store.Reply{RequestID: requestID}
	err := s.pool.QueryRow(ctx, `SELECT payload, error, created_at FROM voltro_replies WHERE request_id = $1`, requestID).
		Scan(&r.Payload, &r.Error, &r.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("get reply", err)
	}
	return &r, nil
}

func (s *Store) NextDelivery(ctx context.Context, owner string, types []string) (time.Duration, bool, error) {
	if owner == "" || len(types) == 0 {
		return 0, false, nil
	}
	var wait *int64
	err := s.pool.QueryRow(ctx, `SELECT (extract(epoch FROM min(m.deliver_at) - now()) * 1000000)::bigint
		FROM voltro_messages m JOIN voltro_shard_locks l ON l.shard = m.shard AND l.owner = $1
		WHERE m.state = 'pending' AND m.deliver_at > now() AND m.entity_type = ANY($2::text[])`, owner, types).Scan(&wait)
	if err != nil {
		return 0, false, wrapErr("next delivery", err)
	}
	if wait == nil {
		return 0, false, nil
	}
	return time.Duration(*wait) * time.Microsecond, true, nil
}

// sqlDrainStats groups the undelivered and dead messages four ways in one
// pass: per shard, per shard and entity type, per entity type (deliverable
// only) and in total. Ages are microseconds.
const sqlDrainStats = `WITH m AS (
		SELECT shard, entity_type, state, deliver_at, claim_expires_at, claim_epoch
		FROM voltro_messages WHERE state IN ('pending', 'claimed')
		UNION ALL
		SELECT shard, entity_type, state, deliver_at, NULL, 0
		FROM voltro_messages WHERE state = 'dead'
	), x AS (
		SELECT m.shard, m.entity_type, m.state, now() - m.deliver_at AS age, coalesce(l.owner, '') AS owner,
			m.state <> 'dead' AND m.deliver_at <= now()
				AND (m.state = 'pending' OR m.claim_expires_at <= now() OR l.epoch IS NULL OR l.epoch > m.claim_epoch)
				AS deliverable
		FROM m LEFT JOIN voltro_shard_locks l ON l.shard = m.shard
	)
	SELECT GROUPING(shard)::int, GROUPING(entity_type)::int, coalesce(shard, ''), coalesce(entity_type, ''),
		coalesce(max(owner), ''),
		count(*) FILTER (WHERE deliverable),
		coalesce((extract(epoch FROM max(age) FILTER (WHERE deliverable)) * 1000000)::bigint, 0),
		count(*) FILTER (WHERE state = 'claimed' AND NOT deliverable),
		count(*) FILTER (WHERE state = 'dead'),
		coalesce((extract(epoch FROM max(age) FILTER (WHERE deliverable OR state = 'claimed')) * 1000000)::bigint, 0),
		now()
	FROM x
	GROUP BY GROUPING SETS ((shard), (shard, entity_type), (entity_type), ())
	ORDER BY 1, 2, 3, 4`

func (s *Store) DrainStats(ctx context.Context) (store.DrainStats, error) {
	var st store.DrainStats
	rows, err := s.pool.Query(ctx, sqlDrainStats)
	if err != nil {
		return st, wrapErr("drain stats", err)
	}
	defer rows.Close()
	gotNow := false
	shardTypes := map[string][]store.TypeBacklog{}
	for rows.Next() {
		var (
			gShard, gType                    int
			shard, typ, owner                string
			pending, claimed, dead           int
			oldestDeliverable, oldestUndeliv int64
			now                              time.Time
		)
		if err := rows.Scan(&gShard, &gType, &shard, &typ, &owner, &pending, &oldestDeliverable, &claimed, &dead, &oldestUndeliv, &now); err != nil {
			return st, wrapErr("drain stats", err)
		}
		st.Now, gotNow = now, true
		age := time.Duration(max(oldestDeliverable, 0)) * time.Microsecond
		switch {
		case gShard == 0 && gType == 0: // per shard and entity type
			if pending > 0 {
				shardTypes[shard] = append(shardTypes[shard], store.TypeBacklog{EntityType: typ, Pending: pending, OldestDeliverable: age})
			}
		case gShard == 0: // per shard
			if pending+claimed+dead == 0 {
				continue // only messages not due yet
			}
			st.Shards = append(st.Shards, store.ShardDrain{Shard: shard, Owner: owner, Pending: pending, OldestDeliverable: age, Claimed: claimed, Dead: dead})
		case gType == 0: // per entity type
			if pending == 0 {
				continue
			}
			st.Types = append(st.Types, store.TypeBacklog{EntityType: typ, Pending: pending, OldestDeliverable: age})
		default: // total
			st.Dead = dead
			st.OldestUndelivered = time.Duration(max(oldestUndeliv, 0)) * time.Microsecond
		}
	}
	if err := rows.Err(); err != nil {
		return st, wrapErr("drain stats", err)
	}
	for i := range st.Shards {
		st.Shards[i].Types = shardTypes[st.Shards[i].Shard] // ordered by type: ORDER BY 4
	}
	if !gotNow {
		if st.Now, err = s.Now(ctx); err != nil {
			return st, err
		}
	}
	return st, nil
}
