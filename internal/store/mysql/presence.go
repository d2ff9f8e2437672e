// Runner presence: which runners have no live locker session (see
// store.PresenceProber); advisory mode, on a single primary, only.

package mysql

import (
	"context"
	"database/sql"
	"strings"

	"github.com/voltro/voltro/internal/store"
)

var _ store.PresenceProber = (*locker)(nil)

func (l *locker) Absent(ctx context.Context, runners []string) ([]string, error) {
	if l.mode != store.LockAdvisory || len(runners) == 0 {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	var b strings.Builder
	args := make([]any, 0, 2*len(runners))
	b.WriteString("SELECT r FROM (")
	for i, r := range runners {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		b.WriteString("SELECT ? AS r, ? AS name")
		args = append(args, r, lockName(l.s.namespace, l.s.database, store.PresenceKey(r)))
	}
	b.WriteString(") p WHERE IS_FREE_LOCK(p.name) = 1")
	rows, err := l.conn.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return nil, wrapErr("presence", err)
	}
	defer rows.Close()
	var absent []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, wrapErr("presence", err)
		}
		absent = append(absent, r)
	}
	return absent, wrapErr("presence", rows.Err())
}

// takePresence takes the runner's presence lock in advisory mode unless
// this session holds it already: at NewLocker, and again on every
// heartbeat while another session (an earlier one of this runner that the
// server has not reaped yet, say) still holds it.
func (l *locker) takePresence(ctx context.Context) error {
	if l.mode != store.LockAdvisory || l.present {
		return nil
	}
	var got sql.NullInt64
	if err := l.conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", lockName(l.s.namespace, l.s.database, store.PresenceKey(l.owner))).Scan(&got); err != nil {
		return wrapErr("locker: take the presence lock", err)
	}
	l.present = got.Int64 == 1
	if !l.present {
		l.s.log.Warn("mysql store: another session holds this runner's presence lock (an earlier session not yet reaped, or two processes with one address); trying again on the next heartbeat", "runner", l.owner)
	}
	return nil
}
