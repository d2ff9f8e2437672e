// Runner presence: which runners have no live locker session (see
// store.PresenceProber); advisory mode only.

package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store"
)

var _ store.PresenceProber = (*locker)(nil)

const sqlAbsent = `SELECT p.runner FROM unnest($1::text[], $2::bigint[]) AS p(runner, key)
	WHERE NOT EXISTS (
		SELECT 1 FROM pg_locks pl
		WHERE pl.locktype = 'advisory' AND pl.granted AND pl.objsubid = 1
		  AND pl.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND ((pl.classid::bigint << 32) | pl.objid::bigint) = p.key)`

func (l *locker) Absent(ctx context.Context, runners []string) ([]string, error) {
	if l.mode != store.LockAdvisory || len(runners) == 0 {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	keys := make([]int64, len(runners))
	for i, r := range runners {
		keys[i] = l.s.lockKey(store.PresenceKey(r))
	}
	rows, err := l.conn.Query(ctx, sqlAbsent, runners, keys)
	if err != nil {
		return nil, wrapErr("presence", err)
	}
	absent, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return absent, wrapErr("presence", err)
}

// takePresence takes the runner's presence lock in advisory mode unless
// this session holds it already: at NewLocker, and again on every
// heartbeat while another session (an earlier one of this runner that the
// server has not reaped yet, say) still holds it.
func (l *locker) takePresence(ctx context.Context) error {
	if l.mode != store.LockAdvisory || l.present {
		return nil
	}
	if err := l.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, l.s.lockKey(store.PresenceKey(l.owner))).Scan(&l.present); err != nil {
		return wrapErr("locker: take the presence lock", err)
	}
	if !l.present {
		l.s.log.Warn("locker: another session holds this runner's presence lock (an earlier session not yet reaped, or two processes with one address); trying again on the next heartbeat", "runner", l.owner)
	}
	return nil
}
