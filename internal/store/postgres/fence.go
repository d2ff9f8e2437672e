// Fencing a frozen runner: end, with pg_terminate_backend, the sessions
// that hold its presence or shard locks (see store.Fencer).

package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

var _ store.Fencer = (*locker)(nil)

// pg_terminate_backend is allowed on the backends of one's own role (or
// with pg_signal_backend); for anything else it raises 42501.
const sqlFence = `SELECT count(*) FILTER (WHERE pg_terminate_backend(h.pid)) FROM (
		SELECT DISTINCT pl.pid FROM pg_locks pl
		WHERE pl.locktype = 'advisory' AND pl.granted AND pl.objsubid = 1
		  AND pl.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND ((pl.classid::bigint << 32) | pl.objid::bigint) = ANY($1::bigint[])
		  AND pl.pid <> pg_backend_pid()) h`

func (l *locker) Fence(ctx context.Context, runner string, shards []string) (int, error) {
	if l.mode != store.LockAdvisory {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return 0, err
	}
	keys := make([]int64, 0, len(shards)+1)
	keys = append(keys, l.s.lockKey(store.PresenceKey(runner)))
	for _, sh := range shards {
		keys = append(keys, l.s.lockKey(sh))
	}
	var n int
	if err := l.conn.QueryRow(ctx, sqlFence, keys).Scan(&n); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return 0, errs.Wrap(errs.CodePermission, err, "postgres: ending the lock session of runner "+runner+
				" (grant pg_signal_backend to this role, or run every instance as one role)")
		}
		return 0, wrapErr("fence "+runner, err)
	}
	return n, nil
}

func (l *locker) Present() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mode != store.LockAdvisory || l.present
}
