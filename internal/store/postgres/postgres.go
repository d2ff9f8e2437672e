package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/sqlclock"
)

// Options tune a Store.
type Options struct {
	// MaxConns caps the application pool (default: DB_MAX_CONNS from the
	// process environment, else 20). Lockers and the wake listener use
	// connections of their own, outside this cap.
	MaxConns int
	// Namespace prefixes advisory lock keys and the NOTIFY channel, so two
	// clusters sharing one database (in different schemas) never collide.
	// Default "voltro".
	Namespace string
	// Logger receives reconnects and other operational events. Default
	// slog.Default().
	Logger *slog.Logger
	// Clock, for tests only, replaces the server's clock: every statement
	// the store sends (pool, DB, lockers, listener) has its now() rewritten
	// to this clock's time, and a statement or column DEFAULT reading the
	// server clock any other way fails (see internal/store/sqlclock). Nil,
	// the default and the only production setting, leaves the SQL and the
	// statement cache untouched: the server's clock is the cluster's single
	// time source. A test clock connects without TLS, and does not reach
	// writes in the caller's own transaction (TxWriter): they run on the
	// caller's connection.
	Clock func() time.Time
}

// Store is the PostgreSQL driver.
type Store struct {
	pool    *pgxpool.Pool
	db      *sql.DB
	connCfg *pgx.ConnConfig // template for reserved connections
	ns      string
	channel string // NOTIFY channel of wake-ups
	log     *slog.Logger
	txID    store.TxIdentity // checks a caller's transaction (tx.go)

	mu      sync.Mutex
	lockers map[*locker]struct{}
	closed  bool
}

var (
	_ store.Driver       = (*Store)(nil)
	_ store.WakeListener = (*Store)(nil)
)

// Open connects the pool to url (a postgres:// URL) and checks that the
// server answers. It does not migrate: call Migrate.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if opts.MaxConns <= 0 {
		n, err := config.MaxConns(store.DefaultMaxConns)
		if err != nil {
			return nil, err
		}
		opts.MaxConns = n
	}
	if opts.Namespace == "" {
		opts.Namespace = "voltro"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	channel := opts.Namespace + "_wake"
	if len(channel) > 63 {
		return nil, errs.New(errs.CodeInvalidConfig, "postgres namespace %q is too long (at most 58 bytes)", opts.Namespace)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errs.Wrap(errs.CodeInvalidConfig, err, "postgres: bad connection URL")
	}
	cfg.MaxConns = int32(opts.MaxConns)
	// pgxpool pings a connection idle for over a second before handing it
	// out, which doubles the statements of an idle runner (its queries come
	// seconds apart). A dead connection fails the query anyway, and the
	// pool replaces it; ping only long-idle ones.
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool { return p.IdleDuration > time.Minute }
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "voltro"
	}
	if opts.Clock != nil {
		useClock(cfg.ConnConfig, opts.Clock)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, wrapErr("open", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, wrapErr("open", err)
	}
	s := &Store{
		pool:    pool,
		db:      stdlib.OpenDBFromPool(pool),
		connCfg: cfg.ConnConfig.Copy(),
		ns:      opts.Namespace,
		channel: channel,
		log:     opts.Logger.With("store", "postgres"),
		lockers: map[*locker]struct{}{},
	}
	return s, nil
}

// DB is the application pool as a database/sql handle (same connections).
func (s *Store) DB() *sql.DB { return s.db }

// Pool is the underlying pgx pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

func (s *Store) Dialect() store.Dialect { return store.Postgres }

func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return time.Time{}, wrapErr("now", err)
	}
	return now, nil
}

// Ping reads a voltro table through the pool.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM voltro_cluster_config`).Scan(&n); err != nil {
		return wrapErr("ping", err)
	}
	return nil
}

// ResolveLockMode: PostgreSQL has session advisory locks, so auto means
// advisory; row leases are there for transaction poolers.
func (s *Store) ResolveLockMode(_ context.Context, requested store.LockMode) (store.LockMode, string, error) {
	switch requested {
	case store.LockAuto, "":
		return store.LockAdvisory, "postgres: session advisory locks on a reserved connection", nil
	case store.LockAdvisory:
		return store.LockAdvisory, "postgres: advisory set explicitly", nil
	case store.LockRow:
		return store.LockRow, "postgres: row leases set explicitly", nil
	}
	return "", "", errs.New(errs.CodeInvalidConfig, "unknown shard lock mode %q (allowed: auto, row, advisory)", requested)
}

// Close closes the lockers still open, then the pool.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ls := make([]*locker, 0, len(s.lockers))
	for l := range s.lockers {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
	err := s.db.Close()
	s.pool.Close()
	if err != nil {
		return fmt.Errorf("postgres close: %w", err)
	}
	return nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// useClock dials cfg's connections through the test clock's rewriter, in
// plaintext (the rewriter reads the statements on the wire), and sends each
// statement's text with each execution (a cached prepared statement would
// keep the time it was prepared at).
func useClock(cfg *pgx.ConnConfig, clock func() time.Time) {
	cfg.TLSConfig = nil
	cfg.Fallbacks = nil
	cfg.DialFunc = pgconn.DialFunc(sqlclock.Dialer(sqlclock.Postgres, clock, sqlclock.DialFunc(cfg.DialFunc)))
	cfg.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
}

// connect opens a connection outside the pool, named for what it carries.
func (s *Store) connect(ctx context.Context, appName string) (*pgx.Conn, error) {
	cfg := s.connCfg.Copy()
	if cfg.RuntimeParams["application_name"] == "voltro" {
		cfg.RuntimeParams["application_name"] = appName
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, wrapErr("connect", err)
	}
	return conn, nil
}

// lockKey is the advisory lock key of a name in this store's namespace.
func (s *Store) lockKey(name string) int64 {
	return lockKey(s.ns, name)
}

func lockKey(ns, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(ns))
	h.Write([]byte{'/'})
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// micros turns a duration into the microseconds the SQL multiplies by
// interval '1 microsecond'.
func micros(d time.Duration) int64 { return d.Microseconds() }

// Capabilities: the SQL pool, transactional writes, batched starts,
// LISTEN/NOTIFY wake-ups and every benchmark probe. A commit needs no
// waiting: its NOTIFY wakes the shard's owner.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{
		SQL: s.DB(), Tx: s, BatchStarts: s, Wakes: s,
		Bench: store.BenchProbes{CommitRate: s, Statements: s, Seeder: s, Analyzer: s, Databases: s},
	}
}
