// Lock survey: the ledger and whether each lease is free, for many shards in
// one query (a single-process store, but the runner's code path is the same).

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/voltro/voltro/internal/store"
)

var _ store.Locker = (*locker)(nil)

// Survey reports owner, epoch and whether the lease is free (no row, owner
// cleared, or expired by the store's clock) for each shard.
func (l *locker) Survey(ctx context.Context, shards []string) ([]store.ShardState, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	if len(shards) == 0 {
		return nil, nil
	}
	js, err := json.Marshal(shards)
	if err != nil {
		return nil, fmt.Errorf("sqlite: encode shards: %w", err)
	}
	rows, err := l.db.QueryContext(ctx, `SELECT s.value, COALESCE(l.owner, ''), COALESCE(l.epoch, 0),
			l.owner IS NULL OR l.owner = '' OR COALESCE(l.expires_at, 0) <= @now
		FROM json_each(@shards) AS s LEFT JOIN voltro_shard_locks l ON l.shard = s.value`,
		sql.Named("shards", string(js)), sql.Named("now", l.s.now()))
	if err != nil {
		return nil, l.s.wrap(err, "survey shard leases")
	}
	defer rows.Close()
	out := make([]store.ShardState, 0, len(shards))
	for rows.Next() {
		var st store.ShardState
		if err := rows.Scan(&st.Shard, &st.Owner, &st.Epoch, &st.Free); err != nil {
			return nil, l.s.wrap(err, "survey shard leases")
		}
		out = append(out, st)
	}
	return out, l.s.wrap(rows.Err(), "survey shard leases")
}
