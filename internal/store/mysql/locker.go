// The locker: one reserved connection, from a one-connection pool of its own
// (apart from the application pool), carrying a runner's shard locks and its
// heartbeat. The mode-specific parts are in advisory.go and lease.go.

package mysql

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

type locker struct {
	s     *Store
	mode  store.LockMode
	owner string

	mu      sync.Mutex
	db      *sql.DB
	conn    *sql.Conn
	connID  int64
	held    map[string]int64  // shard -> epoch we acquired it at
	session map[string]string // advisory: shard -> GET_LOCK name held by this session
	present bool              // advisory: holds the runner's presence lock
	closed  bool
}

// NewLocker opens the reserved connection. Its session counts matched rows
// (CLIENT_FOUND_ROWS), so an UPDATE that finds its row but changes nothing
// still reports it.
func (s *Store) NewLocker(ctx context.Context, mode store.LockMode, owner string) (store.Locker, error) {
	if mode != store.LockRow && mode != store.LockAdvisory {
		return nil, errs.New(errs.CodeInvalidArgument, "locker mode must be resolved to row or advisory, got %q", mode)
	}
	if owner == "" {
		return nil, errs.New(errs.CodeInvalidArgument, "locker owner is empty")
	}
	cfg := s.cfg.Clone()
	cfg.ClientFoundRows = true
	cfg.Params["sql_mode"] = sessionSQLMode
	db, err := openDB(cfg, 1)
	if err != nil {
		return nil, err
	}
	db.SetConnMaxIdleTime(0)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, wrapErr("locker: open the reserved connection", err)
	}
	l := &locker{s: s, mode: mode, owner: owner, db: db, conn: conn,
		held: map[string]int64{}, session: map[string]string{}}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&l.connID); err != nil {
		conn.Close()
		db.Close()
		return nil, wrapErr("locker: open the reserved connection", err)
	}
	if err := l.takePresence(ctx); err != nil {
		conn.Close()
		db.Close()
		return nil, err
	}
	return l, nil
}

func (l *locker) Mode() store.LockMode { return l.mode }

func (l *locker) check() error {
	if l.closed {
		return errs.New(errs.CodeUnavailable, "mysql store: locker of %s is closed", l.owner)
	}
	return nil
}

// exec runs one statement on the reserved connection under retry.
func (l *locker) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := l.s.retry(ctx, func() error {
		var err error
		res, err = l.conn.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

func (l *locker) Acquire(ctx context.Context, shard string, ttl time.Duration) (int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return 0, false, err
	}
	if l.mode == store.LockAdvisory {
		return l.acquireAdvisory(ctx, shard)
	}
	return l.acquireLease(ctx, shard, ttl)
}

func (l *locker) Refresh(ctx context.Context, held map[string]int64, ttl time.Duration) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	if len(held) == 0 {
		// still prove the session is alive: an error means every lock is gone
		var one int
		if err := l.conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			return nil, wrapErr("locker: refresh", err)
		}
		return nil, nil
	}
	if l.mode == store.LockAdvisory {
		return l.refreshAdvisory(ctx, held)
	}
	return l.refreshLeases(ctx, held, ttl)
}

// ledgerOwners reads owner and epoch of the ledger rows of shards.
func (l *locker) ledgerOwners(ctx context.Context, shards []string) (map[string]ledgerRow, error) {
	rows, err := l.conn.QueryContext(ctx, "SELECT shard, owner, epoch FROM voltro_shard_locks WHERE shard IN ("+
		placeholders(len(shards))+")", anys(shards)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]ledgerRow, len(shards))
	for rows.Next() {
		var shard string
		var r ledgerRow
		if err := rows.Scan(&shard, &r.owner, &r.epoch); err != nil {
			return nil, err
		}
		out[shard] = r
	}
	return out, rows.Err()
}

type ledgerRow struct {
	owner string
	epoch int64
}

// Release clears the ledger owner if the row still names us at epoch (any
// epoch when 0) and, in advisory mode, releases the session lock.
func (l *locker) Release(ctx context.Context, shard string, epoch int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	_, err := l.exec(ctx, `UPDATE voltro_shard_locks SET owner = '', expires_at = NULL
		WHERE shard = ? AND owner = ? AND (? = 0 OR epoch = ?)`, shard, l.owner, epoch, epoch)
	if err != nil {
		return wrapErr("locker: release "+shard, err)
	}
	if e, ok := l.held[shard]; ok && (epoch == 0 || e == epoch) {
		delete(l.held, shard)
	}
	if name, ok := l.session[shard]; ok {
		if _, err := l.conn.ExecContext(ctx, "DO RELEASE_LOCK(?)", name); err != nil {
			return wrapErr("locker: release the session lock of "+shard, err)
		}
		delete(l.session, shard)
	}
	return nil
}

// Heartbeat stamps the runner row by the database clock.
func (l *locker) Heartbeat(ctx context.Context, address string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	if err := l.takePresence(ctx); err != nil {
		return err
	}
	res, err := l.exec(ctx, "UPDATE voltro_runners SET last_heartbeat = UTC_TIMESTAMP(6) WHERE address = ?", address)
	if err != nil {
		return wrapErr("locker: heartbeat", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errs.New(errs.CodeNotFound, "runner %s is not registered", address)
	}
	return nil
}

// Close clears the ledger rows still held at our epochs, releases every
// session lock and closes the reserved connection. A dead connection makes
// the cleanup fail quietly: the server has released the session locks and
// the leases expire by themselves.
func (l *locker) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if len(l.held) > 0 {
		shards := make([]string, 0, len(l.held))
		pairs := make([]any, 0, 2*len(l.held))
		for sh, e := range l.held {
			shards = append(shards, sh)
			pairs = append(pairs, sh, e)
		}
		args := append([]any{l.owner}, anys(shards)...)
		args = append(args, pairs...)
		_, err := l.exec(ctx, `UPDATE voltro_shard_locks SET owner = '', expires_at = NULL
			WHERE owner = ? AND shard IN (`+placeholders(len(shards))+`) AND (shard, epoch) IN (`+pairList(len(l.held))+`)`, args...)
		if err != nil {
			l.s.log.Debug("mysql store: locker close: ledger cleanup failed", "owner", l.owner, "err", err)
		}
	}
	if l.mode == store.LockAdvisory {
		_, _ = l.conn.ExecContext(ctx, "DO RELEASE_ALL_LOCKS()")
	}
	l.held, l.session = nil, nil
	_ = l.conn.Close()
	return l.db.Close()
}

// pairList returns "(?, ?), (?, ?), …" with n pairs.
func pairList(n int) string {
	b := make([]byte, 0, n*8)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, "(?, ?)"...)
	}
	return string(b)
}
