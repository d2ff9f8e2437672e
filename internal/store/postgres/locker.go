// Shard locks and the runner heartbeat on one reserved connection: session
// advisory locks with the ledger as epoch record, or row leases on the ledger.

package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

type locker struct {
	s     *Store
	mode  store.LockMode
	owner string

	mu      sync.Mutex
	conn    *pgx.Conn
	held    map[string]int64 // shard -> epoch of our latest acquisition
	present bool             // advisory: holds the runner's presence lock
	closed  bool
}

func (s *Store) NewLocker(ctx context.Context, mode store.LockMode, owner string) (store.Locker, error) {
	if mode != store.LockRow && mode != store.LockAdvisory {
		return nil, errs.New(errs.CodeInvalidArgument, "locker mode must be resolved, got %q", mode)
	}
	if owner == "" {
		return nil, errs.New(errs.CodeInvalidArgument, "locker owner must not be empty")
	}
	conn, err := s.connect(ctx, "voltro-locker")
	if err != nil {
		return nil, err
	}
	l := &locker{s: s, mode: mode, owner: owner, conn: conn, held: map[string]int64{}}
	if err := l.takePresence(ctx); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = conn.Close(ctx)
		return nil, errs.New(errs.CodeUnavailable, "postgres store is closed")
	}
	s.lockers[l] = struct{}{}
	return l, nil
}

func (l *locker) Mode() store.LockMode { return l.mode }

func (l *locker) check() error {
	if l.closed {
		return errs.New(errs.CodeUnavailable, "locker is closed")
	}
	if l.conn.IsClosed() {
		return errs.New(errs.CodeUnavailable, "locker connection is closed")
	}
	return nil
}

// Upserting the ledger row bumps the epoch; in row mode only a free, own or
// expired lease may be taken.
const (
	sqlAcquireAdvisory = `WITH lk AS (SELECT pg_try_advisory_lock($3) AS ok)
		INSERT INTO voltro_shard_locks AS l (shard, owner, epoch, acquired_at, expires_at)
		SELECT $1, $2, 1, now(), NULL FROM lk WHERE lk.ok
		ON CONFLICT (shard) DO UPDATE SET owner = excluded.owner, epoch = l.epoch + 1,
			acquired_at = excluded.acquired_at, expires_at = NULL
		RETURNING epoch`
	sqlReacquireAdvisory = `INSERT INTO voltro_shard_locks AS l (shard, owner, epoch, acquired_at, expires_at)
		VALUES ($1, $2, 1, now(), NULL)
		ON CONFLICT (shard) DO UPDATE SET owner = excluded.owner, epoch = l.epoch + 1,
			acquired_at = excluded.acquired_at, expires_at = NULL
		RETURNING epoch`
	sqlAcquireRow = `INSERT INTO voltro_shard_locks AS l (shard, owner, epoch, acquired_at, expires_at)
		VALUES ($1, $2, 1, now(), now() + $3 * interval '1 microsecond')
		ON CONFLICT (shard) DO UPDATE SET owner = excluded.owner, epoch = l.epoch + 1,
			acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
		WHERE l.owner = excluded.owner OR l.owner = '' OR l.expires_at IS NULL OR l.expires_at <= now()
		RETURNING epoch`
)

func (l *locker) Acquire(ctx context.Context, shard string, ttl time.Duration) (int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return 0, false, err
	}
	var rows pgx.Rows
	var err error
	key := l.s.lockKey(shard)
	_, already := l.held[shard]
	switch {
	case l.mode == store.LockRow:
		rows, err = l.conn.Query(ctx, sqlAcquireRow, shard, l.owner, micros(ttl))
	case already:
		// Session locks nest: never take ours twice, or one unlock would not free it.
		rows, err = l.conn.Query(ctx, sqlReacquireAdvisory, shard, l.owner)
	default:
		rows, err = l.conn.Query(ctx, sqlAcquireAdvisory, shard, l.owner, key)
	}
	var epochs []int64
	if err == nil {
		epochs, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	if err != nil {
		if l.mode == store.LockAdvisory && !already && !l.conn.IsClosed() {
			// A session lock survives a failed statement: do not keep one we
			// did not record.
			_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key)
		}
		return 0, false, wrapErr("acquire "+shard, err)
	}
	if len(epochs) == 0 {
		return 0, false, nil
	}
	l.held[shard] = epochs[0]
	return epochs[0], true, nil
}

const (
	// Row mode: extend the leases still ours at the held epoch.
	sqlRefreshRow = `UPDATE voltro_shard_locks l SET expires_at = now() + $4 * interval '1 microsecond'
		FROM unnest($2::text[], $3::bigint[]) AS h(shard, epoch)
		WHERE l.shard = h.shard AND l.epoch = h.epoch AND l.owner = $1
		RETURNING l.shard`
	// Advisory mode: the ledger rows that still name us at the held epoch.
	sqlRefreshAdvisory = `SELECT l.shard FROM voltro_shard_locks l
		JOIN unnest($2::text[], $3::bigint[]) AS h(shard, epoch) ON l.shard = h.shard AND l.epoch = h.epoch
		WHERE l.owner = $1`
)

func (l *locker) Refresh(ctx context.Context, held map[string]int64, ttl time.Duration) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	shards := make([]string, 0, len(held))
	epochs := make([]int64, 0, len(held))
	for sh, e := range held {
		shards = append(shards, sh)
		epochs = append(epochs, e)
	}
	q, args := sqlRefreshAdvisory, []any{l.owner, shards, epochs}
	if l.mode == store.LockRow {
		q, args = sqlRefreshRow, append(args, micros(ttl))
	}
	// Run even with nothing held: the query proves the connection alive.
	rows, err := l.conn.Query(ctx, q, args...)
	if err != nil {
		return nil, wrapErr("refresh locks", err)
	}
	ok, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrapErr("refresh locks", err)
	}
	kept := make(map[string]bool, len(ok))
	for _, sh := range ok {
		kept[sh] = true
	}
	var lost []string
	for _, sh := range shards {
		_, mine := l.held[sh]
		if !kept[sh] || (l.mode == store.LockAdvisory && !mine) {
			lost = append(lost, sh)
			if e, ok := l.held[sh]; ok && e == held[sh] && l.mode == store.LockRow {
				delete(l.held, sh)
			}
		}
	}
	return lost, nil
}

const sqlReleaseLedger = `UPDATE voltro_shard_locks SET owner = '', expires_at = NULL
	WHERE shard = $1 AND owner = $2 AND ($3 = 0 OR epoch = $3)`

func (l *locker) Release(ctx context.Context, shard string, epoch int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	if _, err := l.conn.Exec(ctx, sqlReleaseLedger, shard, l.owner, epoch); err != nil {
		return wrapErr("release "+shard, err)
	}
	if _, mine := l.held[shard]; mine {
		if l.mode == store.LockAdvisory {
			if _, err := l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, l.s.lockKey(shard)); err != nil {
				return wrapErr("release "+shard, err)
			}
			delete(l.held, shard)
		} else if epoch == 0 || l.held[shard] == epoch {
			delete(l.held, shard)
		}
	}
	return nil
}

func (l *locker) Heartbeat(ctx context.Context, address string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	if err := l.takePresence(ctx); err != nil {
		return err
	}
	tag, err := l.conn.Exec(ctx, `UPDATE voltro_runners SET last_heartbeat = now() WHERE address = $1`, address)
	if err != nil {
		return wrapErr("heartbeat", err)
	}
	if tag.RowsAffected() == 0 {
		return errs.New(errs.CodeNotFound, "runner %s is not registered", address)
	}
	return nil
}

// Close clears the ledger owner of every shard still held, drops the
// session locks and closes the connection. A dead connection just closes:
// the server dropped its session locks already.
func (l *locker) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.s.mu.Lock()
	delete(l.s.lockers, l)
	l.s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !l.conn.IsClosed() {
		if len(l.held) > 0 {
			shards := make([]string, 0, len(l.held))
			epochs := make([]int64, 0, len(l.held))
			for sh, e := range l.held {
				shards = append(shards, sh)
				epochs = append(epochs, e)
			}
			if _, err := l.conn.Exec(ctx, `UPDATE voltro_shard_locks l SET owner = '', expires_at = NULL
				FROM unnest($2::text[], $3::bigint[]) AS h(shard, epoch)
				WHERE l.shard = h.shard AND l.epoch = h.epoch AND l.owner = $1`, l.owner, shards, epochs); err != nil {
				l.s.log.Warn("locker close: clearing the lock ledger failed", "owner", l.owner, "err", err)
			}
		}
		if l.mode == store.LockAdvisory {
			_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
		}
	}
	l.held = map[string]int64{}
	if err := l.conn.Close(ctx); err != nil {
		return wrapErr("locker close", err)
	}
	return nil
}
