// Taking many shards in three round trips (see store.BatchLocker):
// every GET_LOCK in one SELECT, every ledger bump in one upsert, and one
// read of the epochs, instead of three statements a shard.

package mysql

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

var _ store.BatchLocker = (*locker)(nil)

// acquireChunk bounds one statement's size.
const acquireChunk = 200

func (l *locker) AcquireMany(ctx context.Context, shards []string, ttl time.Duration) (map[string]int64, error) {
	out := map[string]int64{}
	if l.mode != store.LockAdvisory {
		// Row mode: each lease is a conditional upsert Galera certifies on
		// its own; keep them one by one.
		for _, sh := range shards {
			e, ok, err := l.Acquire(ctx, sh, ttl)
			if err != nil {
				return out, err
			}
			if ok {
				out[sh] = e
			}
		}
		return out, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return out, err
	}
	for i := 0; i < len(shards); i += acquireChunk {
		if err := l.acquireAdvisoryMany(ctx, shards[i:min(i+acquireChunk, len(shards))], out); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (l *locker) acquireAdvisoryMany(ctx context.Context, shards []string, out map[string]int64) error {
	// 1. The session locks we do not hold yet, all in one SELECT.
	var need []string
	for _, sh := range shards {
		if _, had := l.session[sh]; !had {
			need = append(need, sh)
		}
	}
	var took []string // session locks this call took
	if len(need) > 0 {
		q := make([]string, len(need))
		args := make([]any, len(need))
		dest := make([]sql.NullInt64, len(need))
		ptrs := make([]any, len(need))
		for i, sh := range need {
			q[i] = "GET_LOCK(?, 0)"
			args[i] = lockName(l.s.namespace, l.s.database, sh)
			ptrs[i] = &dest[i]
		}
		if err := l.conn.QueryRowContext(ctx, "SELECT "+strings.Join(q, ", "), args...).Scan(ptrs...); err != nil {
			// Which locks the failed statement took is unknown: drop them all.
			for _, a := range args {
				_, _ = l.conn.ExecContext(ctx, "DO RELEASE_LOCK(?)", a)
			}
			return wrapErr("locker: GET_LOCK of many shards", err)
		}
		for i, sh := range need {
			if dest[i].Valid && dest[i].Int64 == 1 {
				l.session[sh] = args[i].(string)
				took = append(took, sh)
			}
		}
	}
	var mine []string
	for _, sh := range shards {
		if _, ok := l.session[sh]; ok {
			mine = append(mine, sh)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	fail := func(err error) error {
		for _, sh := range took {
			l.dropSessionLock(ctx, sh)
		}
		return wrapErr("locker: record the epochs of many shards", err)
	}
	// 2. One upsert bumps every epoch.
	values := make([]string, len(mine))
	args := make([]any, 0, 2*len(mine))
	for i, sh := range mine {
		values[i] = "(?, ?, 1, UTC_TIMESTAMP(6), NULL)"
		args = append(args, sh, l.owner)
	}
	if _, err := l.exec(ctx, `INSERT INTO voltro_shard_locks (shard, owner, epoch, acquired_at, expires_at) VALUES `+
		strings.Join(values, ", ")+` ON DUPLICATE KEY UPDATE owner = VALUES(owner), epoch = epoch + 1,
		acquired_at = VALUES(acquired_at), expires_at = NULL`, args...); err != nil {
		return fail(err)
	}
	// 3. One read of the epochs.
	ledger, err := l.ledgerOwners(ctx, mine)
	if err != nil {
		return fail(err)
	}
	for _, sh := range mine {
		row, ok := ledger[sh]
		if !ok {
			return fail(errs.New(errs.CodeInternal, "mysql store: ledger row of %s missing after its upsert", sh))
		}
		if row.owner != l.owner {
			// someone wrote the ledger without the session lock: not ours
			l.s.log.Warn("mysql store: ledger row changed under an advisory lock", "shard", sh, "owner", row.owner)
			l.dropSessionLock(ctx, sh)
			continue
		}
		l.held[sh] = row.epoch
		out[sh] = row.epoch
	}
	return nil
}

// ReleaseMany clears the ledger rows still ours at their epochs and drops
// their session locks: two statements for up to acquireChunk shards.
func (l *locker) ReleaseMany(ctx context.Context, held map[string]int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	shards := make([]string, 0, len(held))
	for sh := range held {
		shards = append(shards, sh)
	}
	for i := 0; i < len(shards); i += acquireChunk {
		part := shards[i:min(i+acquireChunk, len(shards))]
		conds := make([]string, len(part))
		args := []any{l.owner}
		for j, sh := range part {
			conds[j] = "(shard = ? AND epoch = ?)"
			args = append(args, sh, held[sh])
		}
		if _, err := l.exec(ctx, `UPDATE voltro_shard_locks SET owner = '', expires_at = NULL
			WHERE owner = ? AND (`+strings.Join(conds, " OR ")+`)`, args...); err != nil {
			return wrapErr("locker: release many shards", err)
		}
		var names []any
		var q []string
		for _, sh := range part {
			if e, ok := l.held[sh]; ok && e == held[sh] {
				delete(l.held, sh)
			}
			if name, ok := l.session[sh]; ok {
				names = append(names, name)
				q = append(q, "RELEASE_LOCK(?)")
				delete(l.session, sh)
			}
		}
		if len(names) > 0 {
			if _, err := l.conn.ExecContext(ctx, "DO "+strings.Join(q, ", "), names...); err != nil {
				return wrapErr("locker: release the session locks of many shards", err)
			}
		}
	}
	return nil
}
