// Message reads: single messages, listings, replies, the next delivery time
// and drain statistics. They use the read pool.

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// scanMessages reads every row of messageCols and closes rows.
func scanMessages(rows *sql.Rows) ([]store.Message, error) {
	defer rows.Close()
	var out []store.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func scanMessage(sc interface{ Scan(...any) error }) (store.Message, error) {
	var m store.Message
	var headers, dedupe sql.NullString
	var state string
	var deliver, claimExp, created, processed int64
	if err := sc.Scan(&m.ID, &m.Shard, &m.EntityType, &m.EntityID, &m.Tag, &m.Payload, &headers, &dedupe, &m.ReplyTo,
		&deliver, &state, &m.ClaimedBy, &m.ClaimEpoch, &claimExp, &m.Attempts, &m.LastError, &created, &processed); err != nil {
		return m, err
	}
	if headers.Valid {
		if err := json.Unmarshal([]byte(headers.String), &m.Headers); err != nil {
			return m, fmt.Errorf("message %d headers: %w", m.ID, err)
		}
	}
	m.DedupeKey = dedupe.String
	m.State = store.MessageState(state)
	m.DeliverAt, m.ClaimExpiresAt = fromMicros(deliver), fromMicros(claimExp)
	m.CreatedAt, m.ProcessedAt = fromMicros(created), fromMicros(processed)
	return m, nil
}

func (s *Store) GetMessage(ctx context.Context, id int64) (store.Message, error) {
	m, err := scanMessage(s.queryRowR(ctx, `SELECT `+messageCols+` FROM voltro_messages WHERE id = ?`, id))
	if err == sql.ErrNoRows {
		return store.Message{}, notFound(id)
	}
	if err != nil {
		return store.Message{}, s.wrap(err, "get message")
	}
	return m, nil
}

func (s *Store) ListMessages(ctx context.Context, f store.MessageFilter) ([]store.Message, error) {
	q := `SELECT ` + messageCols + ` FROM voltro_messages WHERE 1 = 1`
	var args []any
	if f.State != "" {
		q += ` AND state = ?`
		args = append(args, string(f.State))
	}
	if f.EntityType != "" {
		q += ` AND entity_type = ?`
		args = append(args, f.EntityType)
	}
	if f.EntityID != "" {
		q += ` AND entity_id = ?`
		args = append(args, f.EntityID)
	}
	q += ` ORDER BY id`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(err, "list messages")
	}
	out, err := scanMessages(rows)
	return out, s.wrap(err, "list messages")
}

func (s *Store) GetReply(ctx context.Context, requestID int64) (*store.Reply, error) {
	r := store.Reply{RequestID: requestID}
	var created int64
	err := s.queryRowR(ctx, `SELECT payload, error, created_at FROM voltro_replies WHERE request_id = ?`, requestID).
		Scan(&r.Payload, &r.Error, &created)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, s.wrap(err, "get reply")
	}
	r.CreatedAt = fromMicros(created)
	return &r, nil
}

func (s *Store) NextDelivery(ctx context.Context, owner string, types []string) (time.Duration, bool, error) {
	if len(types) == 0 || owner == "" {
		return 0, false, nil
	}
	js, err := json.Marshal(types)
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: encode types: %w", err)
	}
	t := s.now()
	// Walk the future pending messages in deliver_at order; the first that
	// matches is the earliest.
	var next int64
	err = s.r.QueryRowContext(ctx, `SELECT m.deliver_at FROM voltro_messages AS m INDEXED BY voltro_messages_due
		JOIN voltro_shard_locks AS l ON l.shard = m.shard AND l.owner = @owner
		WHERE m.state = 'pending' AND m.deliver_at > @now AND m.entity_type IN (SELECT value FROM json_each(@types))
		ORDER BY m.deliver_at LIMIT 1`,
		sql.Named("owner", owner), sql.Named("now", t), sql.Named("types", string(js))).Scan(&next)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.wrap(err, "next delivery")
	}
	return ageOf(next, t), true, nil
}

// drainSQL groups unprocessed and dead messages by shard, type and category
// (dead, deliverable now, claimed under a live claim, not yet due).
const drainSQL = `SELECT m.shard, COALESCE(l.owner, ''), m.entity_type,
		CASE
			WHEN m.state = 'dead' THEN 'dead'
			WHEN m.deliver_at <= @now AND (m.state = 'pending' OR m.claim_expires_at <= @now
				OR l.epoch IS NULL OR m.claim_epoch < l.epoch) THEN 'deliverable'
			WHEN m.state = 'claimed' THEN 'claimed'
			ELSE 'later'
		END AS category,
		COUNT(*), MIN(m.deliver_at)
	FROM voltro_messages AS m LEFT JOIN voltro_shard_locks AS l ON l.shard = m.shard
	WHERE m.state IN ('pending', 'claimed', 'dead')
	GROUP BY m.shard, m.entity_type, category`

func (s *Store) DrainStats(ctx context.Context) (store.DrainStats, error) {
	t := s.now()
	st := store.DrainStats{Now: fromMicros(t)}
	rows, err := s.r.QueryContext(ctx, drainSQL, sql.Named("now", t))
	if err != nil {
		return st, s.wrap(err, "drain stats")
	}
	defer rows.Close()
	shards := map[string]*store.ShardDrain{}
	types := map[string]*store.TypeBacklog{}
	for rows.Next() {
		var shard, owner, typ, cat string
		var n int
		var oldest int64
		if err := rows.Scan(&shard, &owner, &typ, &cat, &n, &oldest); err != nil {
			return st, s.wrap(err, "drain stats")
		}
		if cat == "later" {
			continue
		}
		d := shards[shard]
		if d == nil {
			d = &store.ShardDrain{Shard: shard, Owner: owner}
			shards[shard] = d
		}
		age := ageOf(t, oldest)
		switch cat {
		case "dead":
			st.Dead += n
			d.Dead += n
		case "deliverable":
			d.Pending += n
			d.OldestDeliverable = max(d.OldestDeliverable, age)
			d.AddShardType(typ, n, age)
			tb := types[typ]
			if tb == nil {
				tb = &store.TypeBacklog{EntityType: typ}
				types[typ] = tb
			}
			tb.Pending += n
			tb.OldestDeliverable = max(tb.OldestDeliverable, age)
			st.OldestUndelivered = max(st.OldestUndelivered, age)
		case "claimed":
			d.Claimed += n
			st.OldestUndelivered = max(st.OldestUndelivered, age)
		}
	}
	if err := rows.Err(); err != nil {
		return st, s.wrap(err, "drain stats")
	}
	for _, d := range shards {
		st.Shards = append(st.Shards, *d)
	}
	for _, tb := range types {
		st.Types = append(st.Types, *tb)
	}
	sort.Slice(st.Shards, func(i, j int) bool { return st.Shards[i].Shard < st.Shards[j].Shard })
	sort.Slice(st.Types, func(i, j int) bool { return st.Types[i].EntityType < st.Types[j].EntityType })
	return st, nil
}
