// How messages drain: when the next delayed message of an owner falls due,
// and the per-shard / per-type backlog summary, both by the database clock.

package mysql

import (
	"context"
	"database/sql"
	"sort"
	"time"

	"github.com/voltro/voltro/internal/store"
)

func (s *Store) NextDelivery(ctx context.Context, owner string, types []string) (time.Duration, bool, error) {
	if owner == "" || len(types) == 0 {
		return 0, false, nil
	}
	var wait sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(m.deliver_at))
		FROM voltro_shard_locks l JOIN voltro_messages m
			ON m.shard = l.shard AND m.state = 'pending' AND m.deliver_at > UTC_TIMESTAMP(6)
		WHERE l.owner = ? AND m.entity_type IN (`+placeholders(len(types))+`)`,
		append([]any{owner}, anys(types)...)...).Scan(&wait)
	if err != nil {
		return 0, false, wrapErr("next delivery", err)
	}
	if !wait.Valid {
		return 0, false, nil
	}
	return time.Duration(wait.Int64) * time.Microsecond, true, nil
}

func (s *Store) DrainStats(ctx context.Context) (store.DrainStats, error) {
	var now time.Time
	if err := s.db.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&now); err != nil {
		return store.DrainStats{}, wrapErr("drain stats", err)
	}
	// Deliverable: due and pending, or under a void claim (expired, or older
	// than the shard's epoch); live: a claim that still counts. The four ?
	// are the database's now, read just before.
	const void = `(m.claim_expires_at IS NULL OR m.claim_expires_at <= ? OR l.epoch IS NULL OR l.epoch > m.claim_epoch)`
	rows, err := s.db.QueryContext(ctx, `SELECT shard, entity_type, owner,
		SUM(deliverable), MIN(IF(deliverable, deliver_at, NULL)),
		SUM(live), MIN(IF(live, deliver_at, NULL)),
		SUM(state = 'dead')
	FROM (SELECT m.shard, m.entity_type, COALESCE(l.owner, '') AS owner, m.state, m.deliver_at,
			m.deliver_at <= ? AND (m.state = 'pending' OR (m.state = 'claimed' AND `+void+`)) AS deliverable,
			m.state = 'claimed' AND NOT (m.deliver_at <= ? AND `+void+`) AS live
		FROM voltro_messages m LEFT JOIN voltro_shard_locks l ON l.shard = m.shard
		WHERE m.state IN ('pending', 'claimed', 'dead')) x
	GROUP BY shard, entity_type, owner`, now, now, now, now)
	if err != nil {
		return store.DrainStats{}, wrapErr("drain stats", err)
	}
	defer rows.Close()
	st := store.DrainStats{Now: now}
	shards := map[string]*store.ShardDrain{}
	types := map[string]*store.TypeBacklog{}
	age := func(t sql.NullTime) time.Duration {
		if !t.Valid {
			return 0
		}
		return now.Sub(t.Time)
	}
	for rows.Next() {
		var shard, typ, owner string
		var deliverable, live, dead int
		var oldestDeliverable, oldestLive sql.NullTime
		if err := rows.Scan(&shard, &typ, &owner, &deliverable, &oldestDeliverable, &live, &oldestLive, &dead); err != nil {
			return store.DrainStats{}, wrapErr("drain stats", err)
		}
		if deliverable == 0 && live == 0 && dead == 0 {
			continue // only messages not yet due
		}
		d := shards[shard]
		if d == nil {
			d = &store.ShardDrain{Shard: shard, Owner: owner}
			shards[shard] = d
		}
		d.Pending += deliverable
		d.Claimed += live
		d.Dead += dead
		st.Dead += dead
		if deliverable > 0 {
			a := age(oldestDeliverable)
			d.OldestDeliverable = max(d.OldestDeliverable, a)
			d.AddShardType(typ, deliverable, a)
			t := types[typ]
			if t == nil {
				t = &store.TypeBacklog{EntityType: typ}
				types[typ] = t
			}
			t.Pending += deliverable
			t.OldestDeliverable = max(t.OldestDeliverable, a)
			st.OldestUndelivered = max(st.OldestUndelivered, a)
		}
		if live > 0 {
			st.OldestUndelivered = max(st.OldestUndelivered, age(oldestLive))
		}
	}
	if err := rows.Err(); err != nil {
		return store.DrainStats{}, wrapErr("drain stats", err)
	}
	for _, d := range shards {
		st.Shards = append(st.Shards, *d)
	}
	for _, t := range types {
		st.Types = append(st.Types, *t)
	}
	sort.Slice(st.Shards, func(i, j int) bool { return st.Shards[i].Shard < st.Shards[j].Shard })
	sort.Slice(st.Types, func(i, j int) bool { return st.Types[i].EntityType < st.Types[j].EntityType })
	return st, nil
}
