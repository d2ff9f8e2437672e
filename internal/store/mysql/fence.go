// Fencing a frozen runner: end, with KILL CONNECTION, the sessions that
// hold its presence or shard locks (see store.Fencer). A user may kill its
// own connections; another user's need CONNECTION ADMIN (MariaDB: or the
// older SUPER / PROCESS-based grants).

package mysql

import (
	"context"
	"fmt"
	"strings"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

var _ store.Fencer = (*locker)(nil)

const (
	errNoSuchThread = 1094 // the session is gone already
	errKillDenied   = 1095 // not the owner of the thread
)

func (l *locker) Fence(ctx context.Context, runner string, shards []string) (int, error) {
	if l.mode != store.LockAdvisory {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return 0, err
	}
	names := make([]string, 0, len(shards)+1)
	names = append(names, lockName(l.s.namespace, l.s.database, store.PresenceKey(runner)))
	for _, sh := range shards {
		names = append(names, lockName(l.s.namespace, l.s.database, sh))
	}
	var b strings.Builder
	args := make([]any, len(names))
	b.WriteString("SELECT DISTINCT id FROM (")
	for i, n := range names {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		b.WriteString("SELECT IS_USED_LOCK(?) AS id")
		args[i] = n
	}
	b.WriteString(") h WHERE id IS NOT NULL AND id <> CONNECTION_ID()")
	rows, err := l.conn.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return 0, wrapErr("fence "+runner, err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, wrapErr("fence "+runner, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, wrapErr("fence "+runner, err)
	}
	ended := 0
	for _, id := range ids {
		// KILL takes no placeholder; id is an integer the server gave us.
		_, err := l.conn.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
		switch {
		case err == nil:
			ended++
		case serverErrno(err) == errNoSuchThread:
		case serverErrno(err) == errKillDenied:
			return ended, errs.Wrap(errs.CodePermission, err, fmt.Sprintf(
				"mysql store: ending connection %d, the lock session of runner %s (run every instance as one database user, or grant CONNECTION ADMIN)", id, runner))
		default:
			return ended, wrapErr("fence "+runner, err)
		}
	}
	return ended, nil
}

func (l *locker) Present() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mode != store.LockAdvisory || l.present
}
