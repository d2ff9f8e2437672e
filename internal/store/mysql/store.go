package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/sqlclock"
)

// Options configure Open.
type Options struct {
	// Dialect is mariadb or mysql; empty takes it from the URL scheme. It
	// only picks SQL features: mysql never uses INSERT … RETURNING.
	Dialect store.Dialect
	// MaxConns caps the store's pools together (default 20): the
	// application pool and, where batches are on, the batch pool, which
	// takes a share of it (see splitConns). Lockers and the migrator use
	// connections of their own on top of it.
	MaxConns int
	// Namespace prefixes every GET_LOCK name (default "voltro"), so two
	// clusters on one server never take each other's locks.
	Namespace string
	Logger    *slog.Logger
	// Clock, for tests only, replaces the server's clock: every statement
	// the store sends has its UTC_TIMESTAMP(n)/NOW(n) rewritten to this
	// clock's time, and a statement reading the server clock any other way
	// fails (see internal/store/sqlclock). Nil, the default and the only
	// production setting, leaves the SQL untouched: the server's clock is
	// the cluster's single time source. A test clock needs a plaintext
	// connection, and does not reach writes in the caller's own
	// transaction (TxWriter): they run on the caller's connection.
	Clock func() time.Time
}

// Store is a store.Driver on MariaDB or MySQL.
type Store struct {
	dialect store.Dialect
	cfg     *gomysql.Config // session settings of every connection we open; multi statements off
	db      *sql.DB         // the application pool: one statement per query
	// batch is the pool for the store's own fixed-text batched writes
	// (txBatch, execBatch), the only connections with multi-statement
	// queries on; nil when batches are off (the URL says
	// multiStatements=false, a Galera node, or a one-connection budget).
	batch     *sql.DB
	database  string
	namespace string
	log       *slog.Logger
	server    serverInfo
	// await is the pool of AwaitCommit's locking reads (awaitConns at
	// most, opened on first use), apart from the application pool so that
	// a caller's long transaction never starves the store's own queries.
	await      *sql.DB
	awaitSlots chan struct{}
	txID       store.TxIdentity // checks a caller's transaction (tx.go)
	retries    atomic.Int64     // statements re-run after 1213/1205
	// beforeCommit, when set (only tests set it), runs inside a fenced
	// write's transaction after its fence and its writes, just before the
	// COMMIT: where a paused writer would be while a takeover commits.
	beforeCommit func(ctx context.Context)
}

var (
	_ store.Driver = (*Store)(nil)
)

// Open connects to url (mariadb:// or mysql://), probes the server (flavor,
// version, Galera) and returns a Store whose pool is ready. It does not
// migrate: call Migrate.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	res, err := dburl.Resolve(url, string(opts.Dialect))
	if err != nil {
		return nil, err
	}
	if res.Dialect != store.MariaDB && res.Dialect != store.MySQL {
		return nil, errs.New(errs.CodeInvalidConfig, "mysql store: dialect %q is not mariadb or mysql", res.Dialect)
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 20
	}
	if opts.Namespace == "" {
		opts.Namespace = "voltro"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg, err := sessionConfig(res.DSN)
	if err != nil {
		return nil, err
	}
	cfg.Logger = driverLogger{opts.Logger}
	if opts.Clock != nil {
		if err := useClock(cfg, opts.Clock); err != nil {
			return nil, err
		}
	}
	info, err := probe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if info.galera {
		// A statement on one node may miss a write just certified on
		// another: wsrep_sync_wait=7 makes reads, updates and inserts on
		// our sessions wait for the node to apply what the cluster has
		// committed first, so a lease taken after a release sees it.
		cfg.Params["wsrep_sync_wait"] = "7"
	}
	// No batch pool on Galera: see batched.
	general, batchConns := splitConns(opts.MaxConns, res.MultiStatements && !info.galera)
	db, err := openDB(cfg, general)
	if err != nil {
		return nil, err
	}
	var batch *sql.DB
	if batchConns > 0 {
		if batch, err = openDB(batchConfig(cfg), batchConns); err != nil {
			db.Close()
			return nil, err
		}
	}
	await, err := openDB(cfg, awaitConns)
	if err != nil {
		db.Close()
		if batch != nil {
			batch.Close()
		}
		return nil, err
	}
	await.SetMaxIdleConns(1)
	s := &Store{
		await:      await,
		awaitSlots: make(chan struct{}, awaitConns),
		dialect:    res.Dialect,
		cfg:        cfg,
		db:         db,
		batch:      batch,
		database:   res.Database,
		namespace:  opts.Namespace,
		log:        opts.Logger.With("store", string(res.Dialect)),
		server:     info,
	}
	if info.galera && info.appliers < 2 {
		// A node with one applier stalls for innodb_lock_wait_timeout when
		// that applier waits on a row lock of a local commit that waits, in
		// certification order, for the next write-set the same applier has
		// yet to certify: conflicting writes from several nodes, which a
		// cluster runtime makes, hit it (see docs/configuration.md).
		s.log.Warn("mysql store: this Galera node applies replicated writes with one thread; set wsrep_slave_threads to 4 or more, or conflicting writes can stall it for innodb_lock_wait_timeout",
			"wsrep_slave_threads", info.appliers)
	}
	if (res.Dialect == store.MariaDB) != info.mariadb {
		s.log.Warn("mysql store: dialect does not match the server flavor", "dialect", res.Dialect, "server", info.version)
	}
	s.log.Debug("mysql store opened", "database", res.Database, "server", info.version,
		"galera", info.galera, "skip_locked", info.skipLocked, "returning", s.returning(),
		"pool", general, "batch_pool", batchConns)
	return s, nil
}

// useClock dials cfg's connections through the test clock's rewriter.
func useClock(cfg *gomysql.Config, clock func() time.Time) error {
	if cfg.TLS != nil || (cfg.TLSConfig != "" && cfg.TLSConfig != "false") {
		return errs.New(errs.CodeInvalidConfig, "mysql store: a test clock needs a plaintext connection (tls=false)")
	}
	dial := cfg.DialFunc
	if dial == nil {
		d := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	cfg.DialFunc = sqlclock.Dialer(sqlclock.MySQL, clock, dial)
	return nil
}

// sessionConfig parses the go-sql-driver DSN and pins what the store relies
// on: UTC times, parsed DATETIMEs, client-side interpolation (one round trip
// per statement instead of prepare+execute), bounded network waits and one
// statement per query (see batchConfig for the exception).
func sessionConfig(dsn string) (*gomysql.Config, error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return nil, errs.Wrap(errs.CodeInvalidConfig, err, "mysql store: bad DSN")
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	// Off on every connection but the batch pool's, whatever the DSN says
	// (dburl's always says false): the application pool is handed out
	// (SQLDB) and runs SQL built elsewhere, some of it with interpolated
	// identifiers, where a multi-statement session would turn any injection
	// into stacked queries.
	cfg.MultiStatements = false
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	return cfg, nil
}

// driverLogger sends go-sql-driver's own messages (e.g. "unexpected EOF" on a
// killed session) to slog at debug level: the store reports what matters.
type driverLogger struct{ log *slog.Logger }

func (d driverLogger) Print(v ...any) { d.log.Debug("mysql driver: " + fmt.Sprint(v...)) }

// batchConfig is cfg for the batch pool: multi-statement queries on, so that
// "START TRANSACTION; …; COMMIT" is one round trip. Only txBatch and
// execBatch use that pool, and only with statements the store builds from
// constants and placeholders; every value is a placeholder, interpolated
// with escaping.
func batchConfig(cfg *gomysql.Config) *gomysql.Config {
	c := cfg.Clone()
	c.MultiStatements = true
	return c
}

// awaitConns caps the connections AwaitCommit holds at once.
const awaitConns = 4

// splitConns divides the connection budget n between the application pool
// and the batch pool, so that the two together open no more than n, the cap
// one pool had before the batch pool existed. Without batches, or with a
// budget of one (which cannot hold two pools), all of it is the
// application pool's and the batched writes run as plain transactions.
// Otherwise the batch pool takes half, rounded down: every hot write
// (Complete, StartExecution, WriteRuns, SendSignal, RequestCancel, Record)
// goes through it in one round trip, while the application pool serves the
// claims, reads and single statements, and the fallbacks of a batch that
// found nothing to write.
func splitConns(n int, batches bool) (general, batch int) {
	if !batches || n < 2 {
		return n, 0
	}
	return n - n/2, n / 2
}

// openDB opens a pool of at most n connections with cfg's session settings.
func openDB(cfg *gomysql.Config, n int) (*sql.DB, error) {
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, errs.Wrap(errs.CodeInvalidConfig, err, "mysql store: bad connection settings")
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}

// returning reports whether INSERT … RETURNING may be used: MariaDB 10.5+
// and a mariadb dialect (the mysql dialect keeps to LastInsertId).
func (s *Store) returning() bool {
	return s.dialect == store.MariaDB && s.server.returning
}

func (s *Store) Dialect() store.Dialect { return s.dialect }

// DB is the application pool. Its sessions run one statement per query:
// "SELECT 1; SELECT 2" is refused (1064), multi-statement batches use a pool
// of their own that the store does not hand out.
func (s *Store) DB() *sql.DB { return s.db }

// RetryCount is how many statements or transactions were re-run after a
// deadlock (1213, which is also how Galera reports a certification
// conflict) or a lock wait timeout (1205).
func (s *Store) RetryCount() int64 { return s.retries.Load() }

// Galera reports whether the server is a wsrep (Galera/PXC) node.
func (s *Store) Galera() bool { return s.server.galera }

func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.db.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&now); err != nil {
		return time.Time{}, wrapErr("read the clock", err)
	}
	return now, nil
}

// Ping reads a voltro table: a Galera node without quorum still answers
// SELECT 1 but refuses this with 1047.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM voltro_cluster_config").Scan(&n)
	if err != nil {
		return wrapErr("ping", err)
	}
	return nil
}

func (s *Store) Close() error {
	var errB error
	_ = s.await.Close()
	if s.batch != nil {
		if err := s.batch.Close(); err != nil {
			errB = fmt.Errorf("mysql store: close batch pool: %w", err)
		}
	}
	if err := s.db.Close(); err != nil {
		return errors.Join(fmt.Errorf("mysql store: close pool: %w", err), errB)
	}
	return errB
}

// Capabilities: the SQL pool, transactional writes and their commit
// waits, batched starts and every benchmark probe. MariaDB pushes no
// wake-ups: runners wake each other over the runner port.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{
		SQL: s.DB(), Tx: s, CommitWaits: s, BatchStarts: s,
		Bench: store.BenchProbes{CommitRate: s, Statements: s, Seeder: s, Analyzer: s, Databases: s},
	}
}
