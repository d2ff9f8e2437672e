// Taking many shards in one statement (see store.BatchLocker).

package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store"
)

var _ store.BatchLocker = (*locker)(nil)

// Advisory mode: try each shard's session lock and bump the epoch of those
// taken, in one statement.
const sqlAcquireManyAdvisory = `WITH got AS (
		SELECT s.shard FROM unnest($2::text[], $3::bigint[]) AS s(shard, key)
		WHERE pg_try_advisory_lock(s.key))
	INSERT INTO voltro_shard_locks AS l (shard, owner, epoch, acquired_at, expires_at)
	SELECT shard, $1, 1, now(), NULL FROM got
	ON CONFLICT (shard) DO UPDATE SET owner = excluded.owner, epoch = l.epoch + 1,
		acquired_at = excluded.acquired_at, expires_at = NULL
	RETURNING shard, epoch`

func (l *locker) AcquireMany(ctx context.Context, shards []string, ttl time.Duration) (map[string]int64, error) {
	out := map[string]int64{}
	var fresh []string
	l.mu.Lock()
	for _, sh := range shards {
		if _, already := l.held[sh]; !already && l.mode == store.LockAdvisory {
			fresh = append(fresh, sh)
		}
	}
	l.mu.Unlock()
	// Row mode, and shards this session holds already, go one by one.
	for _, sh := range shards {
		if l.mode == store.LockAdvisory && slices.Contains(fresh, sh) {
			continue
		}
		e, ok, err := l.Acquire(ctx, sh, ttl)
		if err != nil {
			return out, err
		}
		if ok {
			out[sh] = e
		}
	}
	if len(fresh) == 0 {
		return out, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return out, err
	}
	keys := make([]int64, len(fresh))
	for i, sh := range fresh {
		keys[i] = l.s.lockKey(sh)
	}
	rows, err := l.conn.Query(ctx, sqlAcquireManyAdvisory, l.owner, fresh, keys)
	var got []struct {
		Shard string
		Epoch int64
	}
	if err == nil {
		got, err = pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
			Shard string
			Epoch int64
		}])
	}
	if err != nil {
		if !l.conn.IsClosed() {
			// Session locks survive a failed statement: drop any it took.
			_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock(k) FROM unnest($1::bigint[]) AS k`, keys)
		}
		return out, wrapErr("acquire shards", err)
	}
	for _, g := range got {
		l.held[g.Shard] = g.Epoch
		out[g.Shard] = g.Epoch
	}
	return out, nil
}

// ReleaseMany clears the ledger rows still ours at their epochs and drops
// their session locks: two statements for any number of shards.
func (l *locker) ReleaseMany(ctx context.Context, held map[string]int64) error {
	if len(held) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	shards := make([]string, 0, len(held))
	epochs := make([]int64, 0, len(held))
	for sh, e := range held {
		shards = append(shards, sh)
		epochs = append(epochs, e)
	}
	if _, err := l.conn.Exec(ctx, `UPDATE voltro_shard_locks l SET owner = '', expires_at = NULL
		FROM unnest($2::text[], $3::bigint[]) AS h(shard, epoch)
		WHERE l.shard = h.shard AND l.owner = $1 AND l.epoch = h.epoch`, l.owner, shards, epochs); err != nil {
		return wrapErr("release shards", err)
	}
	var keys []int64
	for _, sh := range shards {
		e, mine := l.held[sh]
		if !mine || e != held[sh] {
			continue
		}
		delete(l.held, sh)
		if l.mode == store.LockAdvisory {
			keys = append(keys, l.s.lockKey(sh))
		}
	}
	if len(keys) > 0 {
		if _, err := l.conn.Exec(ctx, `SELECT pg_advisory_unlock(k) FROM unnest($1::bigint[]) AS k`, keys); err != nil {
			return wrapErr("release shards", err)
		}
	}
	return nil
}
