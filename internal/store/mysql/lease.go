// Row mode: a shard is held by a lease row in voltro_shard_locks, taken by one
// conditional upsert that succeeds only if the row is free, ours, or expired
// by the database clock. Galera certifies that write on every node, which is
// what makes row mode correct on a multi-primary cluster (a conflicting
// upsert on another node fails with 1213 and is retried; the retry then sees
// the winner's row).

package mysql

import (
	"context"
	"sort"
	"time"
)

// acquireLease takes or renews the lease and reads the row back. The owner
// column is assigned first; the later assignments test "owner = me", which
// after the first assignment means "we took it" (left-to-right evaluation,
// pinned by sessionSQLMode on the locker's connection).
func (l *locker) acquireLease(ctx context.Context, shard string, ttl time.Duration) (int64, bool, error) {
	_, err := l.exec(ctx, `INSERT INTO voltro_shard_locks (shard, owner, epoch, acquired_at, expires_at)
		VALUES (?, ?, 1, UTC_TIMESTAMP(6), TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)))
		ON DUPLICATE KEY UPDATE
			owner = IF(owner = '' OR owner = VALUES(owner) OR expires_at IS NULL OR expires_at <= UTC_TIMESTAMP(6), VALUES(owner), owner),
			epoch = IF(owner = VALUES(owner), epoch + 1, epoch),
			acquired_at = IF(owner = VALUES(owner), VALUES(acquired_at), acquired_at),
			expires_at = IF(owner = VALUES(owner), VALUES(expires_at), expires_at)`,
		shard, l.owner, micros(ttl))
	if err != nil {
		return 0, false, wrapErr("locker: take the lease of "+shard, err)
	}
	var row ledgerRow
	if err := l.conn.QueryRowContext(ctx, "SELECT owner, epoch FROM voltro_shard_locks WHERE shard = ?", shard).Scan(&row.owner, &row.epoch); err != nil {
		return 0, false, wrapErr("locker: read the lease of "+shard, err)
	}
	if row.owner != l.owner {
		return 0, false, nil
	}
	l.held[shard] = row.epoch
	return row.epoch, true, nil
}

// refreshLeases extends every lease still ours at the held epoch to now+ttl,
// in one statement; only when it matched fewer rows than asked does it read
// the ledger to name the lost shards.
func (l *locker) refreshLeases(ctx context.Context, held map[string]int64, ttl time.Duration) ([]string, error) {
	shards := make([]string, 0, len(held))
	pairs := make([]any, 0, 2*len(held))
	for sh, e := range held {
		shards = append(shards, sh)
		pairs = append(pairs, sh, e)
	}
	args := append([]any{micros(ttl), l.owner}, anys(shards)...)
	args = append(args, pairs...)
	res, err := l.exec(ctx, `UPDATE voltro_shard_locks SET expires_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))
		WHERE owner = ? AND shard IN (`+placeholders(len(shards))+`) AND (shard, epoch) IN (`+pairList(len(held))+`)`, args...)
	if err != nil {
		return nil, wrapErr("locker: refresh", err)
	}
	if n, _ := res.RowsAffected(); n == int64(len(held)) {
		return nil, nil
	}
	ledger, err := l.ledgerOwners(ctx, shards)
	if err != nil {
		return nil, wrapErr("locker: refresh", err)
	}
	var lost []string
	for _, sh := range shards {
		if r, ok := ledger[sh]; ok && r.owner == l.owner && r.epoch == held[sh] {
			continue
		}
		lost = append(lost, sh)
		if e, ok := l.held[sh]; ok && e == held[sh] {
			delete(l.held, sh)
		}
	}
	sort.Strings(lost)
	return lost, nil
}
