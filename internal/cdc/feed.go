// The Feed: one per instance, owning the pool, the transport and the
// subscriber fan-out.

package cdc

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/cdc/bus"
	"github.com/voltro/voltro/internal/cdc/cdcdriver"
	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	storeopen "github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// Feed is the change feed of one instance.
type Feed struct {
	cfg       Config
	log       *slog.Logger
	dialect   store.Dialect
	database  string
	replicaID string
	db        *sql.DB
	ownDB     bool
	sqlw      rowsql.Dialect
	bus       *bus.Bus

	transport Transport
	fallback  string // why CDC was wanted but not used
	serverID  uint32 // binlog reader's server_id
	reader    cdcdriver.Reader
	notify    *cdcdriver.Notify // the PostgreSQL transport's driver
	noData    error             // why the data API is unavailable (memory without SQLite)

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	run     func(ctx context.Context, ready chan<- struct{}) error // the transport's loop, nil if in-process
	runWhat string
	started bool

	mu     sync.Mutex
	pks    map[string][]string    // table -> primary key columns
	order  map[string]*sync.Mutex // table -> inline publish order lock
	closed bool
	done   chan struct{} // closed by Close

	dsn    string     // driver DSN, for the connections outside the pool
	trigMu sync.Mutex // guards trig; held across its database round trips
	trig   trigState
}

// Open is New followed by Start.
func Open(ctx context.Context, cfg Config) (*Feed, error) {
	f, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := f.Start(ctx); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// New connects to cfg.URL and resolves the transport for its dialect
// (checking the binlog preconditions on MariaDB) without streaming yet.
// Subscribe before Start to receive the changes a restarted MariaDB replica
// catches up on from its stored position.
func New(ctx context.Context, cfg Config) (*Feed, error) {
	r, err := dburl.Resolve(cfg.URL, cfg.Dialect)
	if err != nil {
		return nil, err
	}
	f := &Feed{
		cfg:       cfg,
		log:       cfg.Logger,
		dialect:   r.Dialect,
		database:  r.Database,
		replicaID: cfg.replicaID(),
		db:        cfg.DB,
		bus:       bus.New(cfg.Buffer),
		pks:       map[string][]string{},
		order:     map[string]*sync.Mutex{},
		done:      make(chan struct{}),
		dsn:       r.DSN,
		trig:      trigState{subs: map[string]int{}, held: map[string]bool{}, linger: map[string]*time.Timer{}},
	}
	if f.log == nil {
		f.log = slog.Default()
	}
	f.log = f.log.With("component", "cdc", "replica", f.replicaID)
	if r.Dialect == store.Memory {
		f.database = "memory"
	}
	// memory's row dialect is SQLite's on an in-memory database
	if f.sqlw, err = storeopen.Rows(r.Dialect); err != nil {
		if r.Dialect != store.Memory {
			return nil, storeopen.Missing(r)
		}
		// the memory store itself needs no driver; only writes through
		// the feed do
		f.noData = errs.New(errs.CodeInvalidConfig, "the memory store's change data API writes an in-memory SQLite database: import _ %q", storeopen.DriverImport(store.SQLite))
	}
	if f.db == nil && f.noData == nil {
		if f.db, err = openDB(ctx, f.sqlw, r); err != nil {
			return nil, err
		}
		f.ownDB = true
	}
	if err := f.start(ctx, r); err != nil {
		_ = f.Close()
		return nil, err
	}
	if f.fallback != "" {
		// a change feed was wanted: say at boot, beside the transport, why
		// there is none
		f.log.Warn(f.BootLine(), "dialect", f.dialect, "cdc", f.transport, "fallback", f.fallback)
	} else {
		f.log.Info(f.BootLine(), "dialect", f.dialect, "cdc", f.transport, "server_id", f.serverID)
	}
	return f, nil
}

// Start runs the transport and returns once changes committed from now on
// (and, on MariaDB, since the stored position) will be delivered.
func (f *Feed) Start(ctx context.Context) error {
	f.mu.Lock()
	if f.started || f.closed {
		f.mu.Unlock()
		return nil
	}
	f.started = true
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	f.mu.Unlock()
	if f.run == nil {
		return nil
	}
	ready := make(chan struct{})
	errc := make(chan error, 1)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		errc <- f.run(runCtx, ready)
	}()
	return waitReady(ctx, ready, errc, f.runWhat)
}

// start picks and starts the transport.
func (f *Feed) start(ctx context.Context, r dburl.Resolved) error {
	switch {
	case !r.Dialect.Shared():
		f.transport = Bus
		if f.cfg.DisableCDC {
			f.transport = Inline
		}
		return nil
	case f.cfg.DisableCDC:
		f.transport = Inline
		f.log.Info("CDC=0: changes are emitted inline to this instance's subscribers only")
		return nil
	case r.Dialect == store.Postgres:
		return f.startNotify(r)
	case r.Dialect == store.MariaDB:
		return f.startBinlog(ctx, r)
	default:
		f.transport = Inline
		f.log.Info("mysql has no change feed here: changes are emitted inline to this instance's subscribers only")
		return nil
	}
}

func (f *Feed) startNotify(r dburl.Resolved) error {
	if d := storeopen.Of(r.Dialect); d != nil {
		f.notify = d.Notify
	}
	if f.notify == nil {
		return storeopen.Missing(r) // the store would not have opened either
	}
	f.transport = Notify
	run := f.notify.Listen(cdcdriver.Listener{
		DSN:       r.DSN,
		ReplicaID: f.replicaID,
		Logger:    f.log,
		OnNotify:  f.onNotify,
		OnGap: func(reason string) {
			f.rehold()
			f.bus.ResyncAll(reason)
		},
	})
	f.run, f.runWhat = run, "LISTEN connection"
	return nil
}

// onNotify believes a notification only as far as the database confirms
// it (Notify.Resolve): the channel is open to every role that can
// connect, for listening and for sending. Notes for tables nobody here
// subscribes to are ignored unread.
func (f *Feed) onNotify(ctx context.Context, payload string) {
	n, err := f.notify.Parse(payload)
	if err != nil {
		f.log.Warn("change notification dropped: not from a voltro trigger", "err", err)
		return
	}
	f.trigMu.Lock()
	live := f.trig.subs[n.Table] > 0
	f.trigMu.Unlock()
	if !live {
		return
	}
	pk, err := f.primaryKey(ctx, f.db, n.Table)
	if err == nil {
		var ds []delta.Delta
		if ds, err = f.notify.Resolve(ctx, f.db, n, pk); err == nil {
			f.bus.Publish(ds...)
			return
		}
	}
	if f.notify.Rejected(err) {
		f.log.Warn("change notification dropped", "err", err)
		return
	}
	// a real change may be behind it: the subscribers re-read
	f.log.Warn("change notification could not be confirmed; asking subscribers to resync", "table", n.Table, "err", err)
	f.bus.Publish(delta.NewResync(n.Table, "a change could not be re-read"))
}

// waitReady waits for a transport's first connection.
func waitReady(ctx context.Context, ready <-chan struct{}, errc <-chan error, what string) error {
	select {
	case <-ready:
		return nil
	case err := <-errc:
		if err == nil {
			err = context.Canceled
		}
		return fmt.Errorf("start change feed: %s: %w", what, err)
	case <-ctx.Done():
		return fmt.Errorf("start change feed: waiting for %s: %w", what, ctx.Err())
	}
}

// Close stops the transport, ends every subscription and closes the pool
// (unless it was passed in Config.DB).
func (f *Feed) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	cancel := f.cancel
	close(f.done)
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	f.wg.Wait()
	f.bus.Close()
	if f.transport == Notify {
		f.closeTriggers()
	}
	if f.ownDB && f.db != nil {
		return f.db.Close()
	}
	return nil
}

// DB is the application pool (nil on the memory store when the program
// does not import driver/sqlite). Writes made with it directly are seen by the
// PostgreSQL and MariaDB feeds, not by inline emit.
func (f *Feed) DB() *sql.DB { return f.db }

// Dialect is the resolved dialect.
func (f *Feed) Dialect() store.Dialect { return f.dialect }

// ReplicaID is the instance name the feed runs as.
func (f *Feed) ReplicaID() string { return f.replicaID }

// Transport is the resolved transport.
func (f *Feed) Transport() Transport { return f.transport }

// Flavor is the CDC flavor string for status displays, e.g.
// "binlog CDC (ROW)" or "inline emit".
func (f *Feed) Flavor() string { return f.transport.Label() }

// ServerID is the binlog reader's server_id (0 unless the transport is
// Binlog).
func (f *Feed) ServerID() uint32 { return f.serverID }

// Fallback says why a change feed was wanted but inline emit is used ("" if
// not).
func (f *Feed) Fallback() string { return f.fallback }

// BootLine is the boot log line naming the dialect and the CDC transport
// (and, after a fallback, that it is one).
func (f *Feed) BootLine() string {
	line := fmt.Sprintf("sql dialect resolved: %s — CDC: %s", f.dialect, f.transport.Label())
	if f.fallback != "" {
		line += " (fallback: " + f.fallback + ")"
	}
	if f.dialect != store.Memory && f.sqlw.Name != "" {
		line += ", RETURNING: " + f.sqlw.Returning()
	}
	return line
}

// Problem says what degrades the change feed now, "" when nothing: the
// reason of a fallback to inline emit, or a binlog stream that keeps failing.
func (f *Feed) Problem() string {
	if f.fallback != "" {
		return "fell back to inline emit: " + f.fallback
	}
	if f.reader != nil {
		return f.reader.Trouble()
	}
	return ""
}

// Done is closed when Close is called: every subscription has ended.
func (f *Feed) Done() <-chan struct{} { return f.done }

// Overflows counts resync signals sent because a subscriber fell behind.
func (f *Feed) Overflows() int64 { return f.bus.Overflows() }

// Subscribe returns the deltas of table that pass filter (nil for all), in
// commit order, until ctx ends; then the channel is closed. A delta with Op
// Resync means changes may have been missed: re-read the table.
func (f *Feed) Subscribe(ctx context.Context, table string, filter delta.Filter) (<-chan delta.Delta, error) {
	if err := rowsql.CheckIdent("table", table); err != nil {
		return nil, err
	}
	if f.transport != Notify {
		return f.bus.Subscribe(ctx, table, filter), nil
	}
	if err := f.holdTrigger(ctx, table); err != nil {
		return nil, err
	}
	ch := f.bus.Subscribe(ctx, table, filter)
	go func() {
		select {
		case <-ctx.Done():
			f.releaseTrigger(table)
		case <-f.done: // Close removes what is left
		}
	}()
	return ch, nil
}

// primaryKey caches the key columns of table, read through q (inside a
// transaction, its own connection: SQLite pools hold one).
func (f *Feed) primaryKey(ctx context.Context, q rowsql.Querier, table string) ([]string, error) {
	f.mu.Lock()
	pk, ok := f.pks[table]
	f.mu.Unlock()
	if ok {
		return pk, nil
	}
	pk, err := rowsql.PrimaryKey(ctx, q, f.sqlw, table)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.pks[table] = pk
	f.mu.Unlock()
	return pk, nil
}
