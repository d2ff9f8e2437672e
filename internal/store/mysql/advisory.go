// Advisory mode: a shard is held by GET_LOCK on the locker's session, which
// the server releases the instant the session dies. The ledger row only
// carries the epoch: each acquisition bumps it.

package mysql

import (
	"context"
	"database/sql"
	"sort"

	"github.com/voltro/voltro/internal/errs"
)

func (l *locker) acquireAdvisory(ctx context.Context, shard string) (int64, bool, error) {
	_, had := l.session[shard]
	if !had {
		name := lockName(l.s.namespace, l.s.database, shard)
		var got sql.NullInt64
		if err := l.conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", name).Scan(&got); err != nil {
			return 0, false, wrapErr("locker: GET_LOCK "+shard, err)
		}
		if !got.Valid {
			return 0, false, errs.New(errs.CodeUnavailable, "mysql store: GET_LOCK(%q) returned NULL", name)
		}
		if got.Int64 != 1 {
			return 0, false, nil
		}
		l.session[shard] = name
	}
	_, err := l.exec(ctx, `INSERT INTO voltro_shard_locks (shard, owner, epoch, acquired_at, expires_at)
		VALUES (?, ?, 1, UTC_TIMESTAMP(6), NULL)
		ON DUPLICATE KEY UPDATE owner = VALUES(owner), epoch = epoch + 1, acquired_at = VALUES(acquired_at), expires_at = NULL`,
		shard, l.owner)
	var row ledgerRow
	if err == nil {
		err = l.conn.QueryRowContext(ctx, "SELECT owner, epoch FROM voltro_shard_locks WHERE shard = ?", shard).Scan(&row.owner, &row.epoch)
	}
	if err != nil {
		if !had {
			l.dropSessionLock(ctx, shard)
		}
		return 0, false, wrapErr("locker: record the epoch of "+shard, err)
	}
	if row.owner != l.owner {
		// someone wrote the ledger without the session lock (a runner in
		// another lock mode, or on another Galera node): not ours
		l.s.log.Warn("mysql store: ledger row changed under an advisory lock", "shard", shard, "owner", row.owner)
		l.dropSessionLock(ctx, shard)
		return 0, false, nil
	}
	l.held[shard] = row.epoch
	return row.epoch, true, nil
}

func (l *locker) dropSessionLock(ctx context.Context, shard string) {
	if name, ok := l.session[shard]; ok {
		_, _ = l.conn.ExecContext(ctx, "DO RELEASE_LOCK(?)", name)
		delete(l.session, shard)
	}
}

// refreshAdvisory checks that the session still holds each lock and that the
// ledger still names us at the held epoch. Any error on the session means it
// may be gone, and with it every lock.
func (l *locker) refreshAdvisory(ctx context.Context, held map[string]int64) ([]string, error) {
	shards := make([]string, 0, len(held))
	for sh := range held {
		shards = append(shards, sh)
	}
	mine := make(map[string]bool, len(shards))
	const chunk = 500
	for i := 0; i < len(shards); i += chunk {
		part := shards[i:min(i+chunk, len(shards))]
		cols := make([]any, len(part))
		dest := make([]sql.NullBool, len(part))
		q := make([]byte, 0, 40*len(part))
		q = append(q, "SELECT "...)
		for j, sh := range part {
			if j > 0 {
				q = append(q, ", "...)
			}
			q = append(q, "IS_USED_LOCK(?) = CONNECTION_ID()"...)
			cols[j] = lockName(l.s.namespace, l.s.database, sh)
		}
		ptrs := make([]any, len(part))
		for j := range dest {
			ptrs[j] = &dest[j]
		}
		if err := l.conn.QueryRowContext(ctx, string(q), cols...).Scan(ptrs...); err != nil {
			return nil, wrapErr("locker: refresh", err)
		}
		for j, sh := range part {
			mine[sh] = dest[j].Valid && dest[j].Bool
		}
	}
	ledger, err := l.ledgerOwners(ctx, shards)
	if err != nil {
		return nil, wrapErr("locker: refresh", err)
	}
	var lost []string
	for _, sh := range shards {
		r, ok := ledger[sh]
		if mine[sh] && ok && r.owner == l.owner && r.epoch == held[sh] {
			continue
		}
		lost = append(lost, sh)
		if !mine[sh] {
			delete(l.session, sh)
		}
		if e, ok := l.held[sh]; ok && e == held[sh] {
			delete(l.held, sh)
		}
	}
	sort.Strings(lost)
	return lost, nil
}
