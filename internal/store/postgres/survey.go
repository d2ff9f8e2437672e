// Lock survey: the ledger and the real lock state of many shards in one
// query, so a runner sees within a tick which owners lost their session.

package postgres

import (
	"context"

	"github.com/voltro/voltro/internal/store"
)

var _ store.Locker = (*locker)(nil)

// Advisory mode reads pg_locks for the shards' keys (two-int4 form: classid
// holds the high half, objid the low half, objsubid 1); row mode reads the
// lease expiry.
const sqlSurvey = `WITH held AS (
		SELECT ((pl.classid::bigint << 32) | pl.objid::bigint) AS key
		FROM pg_locks pl
		WHERE pl.locktype = 'advisory' AND pl.granted AND pl.objsubid = 1
		  AND pl.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
	SELECT s.shard, COALESCE(l.owner, ''), COALESCE(l.epoch, 0),
		CASE WHEN $3 THEN NOT EXISTS (SELECT 1 FROM held WHERE held.key = s.key)
		     ELSE (l.owner IS NULL OR l.owner = '' OR l.expires_at IS NULL OR l.expires_at <= now()) END
	FROM unnest($1::text[], $2::bigint[]) AS s(shard, key)
	LEFT JOIN voltro_shard_locks l ON l.shard = s.shard`

func (l *locker) Survey(ctx context.Context, shards []string) ([]store.ShardState, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	keys := make([]int64, len(shards))
	for i, s := range shards {
		keys[i] = l.s.lockKey(s)
	}
	rows, err := l.conn.Query(ctx, sqlSurvey, shards, keys, l.mode == store.LockAdvisory)
	if err != nil {
		return nil, wrapErr("survey", err)
	}
	defer rows.Close()
	out := make([]store.ShardState, 0, len(shards))
	for rows.Next() {
		var st store.ShardState
		if err := rows.Scan(&st.Shard, &st.Owner, &st.Epoch, &st.Free); err != nil {
			return nil, wrapErr("survey", err)
		}
		out = append(out, st)
	}
	return out, wrapErr("survey", rows.Err())
}
