// The shard locker: row leases in voltro_shard_locks, taken by a conditional
// upsert, on a connection reserved for the locker (apart from the pools).

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// locker holds row leases for one runner on its own connection.
type locker struct {
	s     *Store
	db    *sql.DB // one connection, reserved for this locker
	owner string

	mu     sync.Mutex
	held   map[string]int64 // shards acquired through this locker -> epoch
	closed bool
}

// NewLocker opens a row-lease locker. SQLite has no advisory locks: a mode
// must be resolved by ResolveLockMode first, which always yields row.
func (s *Store) NewLocker(ctx context.Context, mode store.LockMode, owner string) (store.Locker, error) {
	if mode != store.LockRow {
		return nil, errs.New(errs.CodeInvalidArgument,
			"sqlite store: shard lock mode %q is not available; SQLite supports row leases only (resolve the mode with ResolveLockMode, which turns auto and advisory into row)", mode)
	}
	if owner == "" {
		return nil, errs.New(errs.CodeInvalidArgument, "sqlite store: locker owner is empty")
	}
	if s.closed.Load() {
		return nil, errs.New(errs.CodeUnavailable, "sqlite store is closed")
	}
	db, err := openPool(s.dsn, 1)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, s.wrap(err, "open locker connection")
	}
	l := &locker{s: s, db: db, owner: owner, held: map[string]int64{}}
	s.mu.Lock()
	s.lockers[l] = struct{}{}
	s.mu.Unlock()
	return l, nil
}

func (l *locker) Mode() store.LockMode { return store.LockRow }

func (l *locker) check() error {
	if l.closed {
		return errs.New(errs.CodeUnavailable, "sqlite locker of %s is closed", l.owner)
	}
	return nil
}

// Acquire takes the lease if the row is free, ours, or expired, bumping the
// epoch; it creates the row at epoch 1 when the shard has none.
func (l *locker) Acquire(ctx context.Context, shard string, ttl time.Duration) (int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return 0, false, err
	}
	t := l.s.now()
	var epoch int64
	err := l.db.QueryRowContext(ctx, `INSERT INTO voltro_shard_locks (shard, owner, epoch, acquired_at, expires_at)
		VALUES (@shard, @owner, 1, @now, @expires)
		ON CONFLICT (shard) DO UPDATE SET
			owner = excluded.owner, epoch = voltro_shard_locks.epoch + 1,
			acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
		WHERE voltro_shard_locks.owner IN ('', excluded.owner) OR voltro_shard_locks.expires_at <= @now
		RETURNING epoch`,
		sql.Named("shard", shard), sql.Named("owner", l.owner), sql.Named("now", t), sql.Named("expires", t+durMicros(ttl)),
	).Scan(&epoch)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, l.s.wrap(err, "acquire shard "+shard)
	}
	l.held[shard] = epoch
	return epoch, true, nil
}

// Refresh extends to now+ttl every lease in held still ours at its epoch and
// reports the others as lost.
func (l *locker) Refresh(ctx context.Context, held map[string]int64, ttl time.Duration) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	if len(held) == 0 {
		return nil, nil
	}
	js, err := json.Marshal(held)
	if err != nil {
		return nil, fmt.Errorf("sqlite: encode held shards: %w", err)
	}
	t := l.s.now()
	rows, err := l.db.QueryContext(ctx, `UPDATE voltro_shard_locks SET expires_at = @expires
		FROM json_each(@held) AS h
		WHERE voltro_shard_locks.shard = h.key AND voltro_shard_locks.epoch = h.value AND voltro_shard_locks.owner = @owner
		RETURNING shard`,
		sql.Named("expires", t+durMicros(ttl)), sql.Named("held", string(js)), sql.Named("owner", l.owner))
	if err != nil {
		return nil, l.s.wrap(err, "refresh shard leases")
	}
	defer rows.Close()
	kept := make(map[string]bool, len(held))
	for rows.Next() {
		var sh string
		if err := rows.Scan(&sh); err != nil {
			return nil, l.s.wrap(err, "refresh shard leases")
		}
		kept[sh] = true
	}
	if err := rows.Err(); err != nil {
		return nil, l.s.wrap(err, "refresh shard leases")
	}
	var lost []string
	for sh := range held {
		if !kept[sh] {
			lost = append(lost, sh)
			if l.held[sh] == held[sh] {
				delete(l.held, sh)
			}
		}
	}
	return lost, nil
}

// Release clears the owner of shard if still ours at epoch (0 = any epoch).
func (l *locker) Release(ctx context.Context, shard string, epoch int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	_, err := l.db.ExecContext(ctx, `UPDATE voltro_shard_locks SET owner = '', expires_at = 0
		WHERE shard = @shard AND owner = @owner AND (@epoch = 0 OR epoch = @epoch)`,
		sql.Named("shard", shard), sql.Named("owner", l.owner), sql.Named("epoch", epoch))
	if err != nil {
		return l.s.wrap(err, "release shard "+shard)
	}
	if e, ok := l.held[shard]; ok && (epoch == 0 || e == epoch) {
		delete(l.held, shard)
	}
	return nil
}

func (l *locker) Heartbeat(ctx context.Context, address string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	res, err := l.db.ExecContext(ctx, `UPDATE voltro_runners SET last_heartbeat = ? WHERE address = ?`, l.s.now(), address)
	if err != nil {
		return l.s.wrap(err, "heartbeat")
	}
	if n, err := res.RowsAffected(); err != nil {
		return l.s.wrap(err, "heartbeat")
	} else if n == 0 {
		return errs.New(errs.CodeNotFound, "runner %s is not registered", address)
	}
	return nil
}

// Close gives up the leases this locker still holds (so a successor need
// not wait for them to expire) and closes the reserved connection.
func (l *locker) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	held := l.held
	l.held = nil
	l.mu.Unlock()

	l.s.mu.Lock()
	delete(l.s.lockers, l)
	l.s.mu.Unlock()

	if len(held) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		js, err := json.Marshal(held)
		if err == nil {
			_, err = l.db.ExecContext(ctx, `UPDATE voltro_shard_locks SET owner = '', expires_at = 0
				FROM json_each(?) AS h
				WHERE voltro_shard_locks.shard = h.key AND voltro_shard_locks.epoch = h.value AND voltro_shard_locks.owner = ?`,
				string(js), l.owner)
		}
		if err != nil {
			l.s.log.Warn("sqlite locker: releasing leases on close; they will expire instead", "owner", l.owner, "shards", len(held), "err", err)
		}
	}
	if err := l.db.Close(); err != nil {
		return fmt.Errorf("sqlite: close locker connection: %w", err)
	}
	return nil
}

// Absent: SQLite lockers hold no sessions; see
// store.PresenceProber (row mode's answers).
func (l *locker) Absent(context.Context, []string) ([]string, error) { return nil, nil }

// Present is always true without a session (store.PresenceProber).
func (l *locker) Present() bool { return true }

// Fence has no session to end (store.Fencer).
func (l *locker) Fence(context.Context, string, []string) (int, error) { return 0, nil }

// AcquireMany takes each shard in turn (store.OneByOne).
func (l *locker) AcquireMany(ctx context.Context, shards []string, ttl time.Duration) (map[string]int64, error) {
	return store.OneByOne{Acquire: l.Acquire, Release: l.Release}.AcquireMany(ctx, shards, ttl)
}

// ReleaseMany releases each shard in turn (store.OneByOne).
func (l *locker) ReleaseMany(ctx context.Context, held map[string]int64) error {
	return store.OneByOne{Acquire: l.Acquire, Release: l.Release}.ReleaseMany(ctx, held)
}
