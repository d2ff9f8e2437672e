package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// Options tune Open. The zero value is ready to use.
type Options struct {
	// BusyTimeout is how long a connection waits for another connection's
	// write lock before failing. Default 10s.
	BusyTimeout time.Duration
	// ReadConns caps the read pool (the pool DB() returns). Default 4.
	ReadConns int
	// Logger receives migration and shutdown notes. Default slog.Default().
	Logger *slog.Logger
	// Clock is the store's time source (default time.Now): every lease,
	// claim, delivery time, heartbeat and retention cutoff reads it. Tests
	// pass a controllable clock to move time without sleeping.
	Clock func() time.Time
}

// Store is a SQLite-backed store.Driver.
type Store struct {
	path   string
	dsn    string
	w      *sql.DB // the single write connection
	r      *sql.DB // the read pool, also handed out by DB()
	log    *slog.Logger
	clock  func() time.Time
	closed atomic.Bool
	txID   store.TxIdentity // checks a caller's transaction (tx.go)

	mu      sync.Mutex
	lockers map[*locker]struct{}
	stmts   map[stmtKey]*sql.Stmt
}

var (
	_ store.Driver = (*Store)(nil)
)

// Open opens (creating if needed) the database file at path. It does not
// migrate: call Migrate.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	s := &Store{path: path, dsn: dsn(path, opts.BusyTimeout), log: opts.Logger, clock: opts.Clock,
		lockers: map[*locker]struct{}{}, stmts: map[stmtKey]*sql.Stmt{}}
	var err error
	if s.w, err = openPool(s.dsn, 1); err != nil {
		return nil, err
	}
	if s.r, err = openPool(s.dsn, opts.ReadConns); err != nil {
		_ = s.w.Close()
		return nil, err
	}
	// Open the write connection now: it switches the file to WAL, and a bad
	// path or a file that is not a database fails here rather than later.
	if err := s.w.PingContext(ctx); err != nil {
		_ = s.r.Close()
		_ = s.w.Close()
		return nil, errs.Wrap(errs.CodeUnavailable, err, fmt.Sprintf("open sqlite database %s", path))
	}
	return s, nil
}

// checkPath rejects what is not a plain database file path.
func checkPath(path string) error {
	switch {
	case path == "", path == ":memory:", strings.Contains(path, "mode=memory"):
		return errs.New(errs.CodeInvalidConfig, "sqlite store needs a database file path, got %q (use the memory store for an in-memory database)", path)
	case strings.HasPrefix(path, "file:"), strings.Contains(path, "?"):
		return errs.New(errs.CodeInvalidConfig, "sqlite store takes a plain file path, not a URI with parameters: %q", path)
	}
	return nil
}

// dsn builds the connection string: a plain path plus modernc parameters.
func dsn(path string, busy time.Duration) string {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "NORMAL")
	q.Set("_foreign_keys", "1")
	q.Set("_txlock", "immediate")
	return path + "?" + q.Encode()
}

func openPool(dsn string, conns int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	return db, nil
}

// Path is the database file path the store was opened with.
func (s *Store) Path() string { return s.path }

// DB is the application pool: reads, and writes in BEGIN IMMEDIATE
// transactions, for features that keep their own tables.
func (s *Store) DB() *sql.DB { return s.r }

func (s *Store) Dialect() store.Dialect { return store.SQLite }

// Ping runs a query on the application pool that touches a voltro table.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM voltro_schema_migrations`).Scan(&n)
	return s.wrap(err, "ping")
}

// ResolveLockMode: SQLite has no advisory locks, so every mode is row leases.
func (s *Store) ResolveLockMode(_ context.Context, requested store.LockMode) (store.LockMode, string, error) {
	switch requested {
	case store.LockAuto, "":
		return store.LockRow, "sqlite: row leases (single-process store)", nil
	case store.LockAdvisory:
		return store.LockRow, "sqlite: advisory locks requested, but SQLite has none; using row leases (single-process store)", nil
	case store.LockRow:
		return store.LockRow, "sqlite: row leases (set explicitly)", nil
	}
	return "", "", errs.New(errs.CodeInvalidConfig, "unknown shard lock mode %q (allowed: auto, row, advisory)", requested)
}

// Close closes every locker still open, then both pools.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	ls := make([]*locker, 0, len(s.lockers))
	for l := range s.lockers {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, l := range ls {
		if err := l.Close(); err != nil {
			s.log.Warn("sqlite store: closing a locker", "err", err)
		}
	}
	s.closeStmts()
	errR := s.r.Close()
	errW := s.w.Close()
	if errW != nil {
		return fmt.Errorf("sqlite: close: %w", errW)
	}
	if errR != nil {
		return fmt.Errorf("sqlite: close: %w", errR)
	}
	return nil
}

// Capabilities: the SQL pool, transactional writes (and their commit
// waits), one executing engine per file, and the commit-rate and analyze
// probes.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{
		SQL: s.DB(), Tx: s, CommitWaits: s, Exclusive: s,
		Bench: store.BenchProbes{CommitRate: s, Analyzer: s},
	}
}
