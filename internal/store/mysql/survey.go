// Lock survey: the ledger and the real lock state of many shards in one
// statement, so a runner sees within a tick which owners lost their session.

package mysql

import (
	"context"
	"strings"

	"github.com/voltro/voltro/internal/store"
)

var _ store.Locker = (*locker)(nil)

// Survey: advisory mode asks IS_FREE_LOCK for each shard's lock name (only
// meaningful on a single primary, which is where advisory mode runs); row
// mode reads the lease expiry by the server clock.
func (l *locker) Survey(ctx context.Context, shards []string) ([]store.ShardState, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	if len(shards) == 0 {
		return nil, nil
	}
	var b strings.Builder
	args := make([]any, 0, 2*len(shards))
	b.WriteString("SELECT s.shard, COALESCE(l.owner, ''), COALESCE(l.epoch, 0), ")
	if l.mode == store.LockAdvisory {
		b.WriteString("IS_FREE_LOCK(s.name) = 1")
	} else {
		b.WriteString("(l.owner IS NULL OR l.owner = '' OR l.expires_at IS NULL OR l.expires_at <= NOW(6))")
	}
	b.WriteString(" FROM (")
	for i, s := range shards {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		b.WriteString("SELECT ? AS shard, ? AS name")
		args = append(args, s, lockName(l.s.namespace, l.s.database, s))
	}
	b.WriteString(") s LEFT JOIN voltro_shard_locks l ON l.shard = s.shard")
	rows, err := l.conn.QueryContext(ctx, b.String(), args...)
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
