package cdcdriver

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/store"
)

// Runner is a transport's loop: it closes ready once changes committed
// from then on will be delivered, and returns when ctx ends (or, before
// ready, when it cannot start).
type Runner func(ctx context.Context, ready chan<- struct{}) error

// Notify is the PostgreSQL transport: keys-only triggers, LISTEN/NOTIFY,
// and a session of its own for the subscription locks.
type Notify struct {
	// Listen returns the loop of the LISTEN connection.
	Listen func(l Listener) Runner
	// Parse reads a notification payload; Resolve re-reads the rows it
	// names through db. Rejected reports whether an error of either means
	// the payload cannot have come from a voltro trigger.
	Parse    func(payload string) (Note, error)
	Resolve  func(ctx context.Context, db *sql.DB, n Note, pk []string) ([]delta.Delta, error)
	Rejected func(err error) bool
	// Install and Uninstall put the change triggers of table in place and
	// remove them.
	Install   func(ctx context.Context, db *sql.DB, table string, pk []string) error
	Uninstall func(ctx context.Context, db *sql.DB, table string) error
	// Locks connects, outside the pool, the session named appName that
	// holds one instance's subscription locks.
	Locks func(ctx context.Context, dsn, appName string) (store.SubscriberLocks, error)
}

// Listener says what a LISTEN connection listens for and where it sends it.
type Listener struct {
	DSN       string
	ReplicaID string
	Logger    *slog.Logger
	OnNotify  func(ctx context.Context, payload string)
	OnGap     func(reason string)
}

// Note is a parsed notification: the table it is about, and the driver's
// own form of it for Resolve.
type Note struct {
	Table string
	Impl  any
}

// Binlog is the MariaDB transport: a binlog reader per instance.
type Binlog struct {
	// Check reads the source server through db (a connection of the
	// replication user) and names every unmet precondition.
	Check func(ctx context.Context, db *sql.DB) (sourceServerID uint32, missing []string, err error)
	// ServerID derives the reader's server_id from the replica id.
	ServerID func(replicaID string, sourceServerID uint32) uint32
	// PrepareOffsets readies the resume positions on the application pool.
	PrepareOffsets func(ctx context.Context, db *sql.DB) error
	// Reader makes the reader.
	Reader func(c ReaderConfig) Reader
}

// ReaderConfig is one binlog reader's connection and callbacks.
type ReaderConfig struct {
	Host           string
	Port           uint16
	User, Password string
	Database       string
	ReplicaID      string
	ServerID       uint32
	// DB is the application pool, which keeps the resume position.
	DB        *sql.DB
	Logger    *slog.Logger
	OnTx      func(ds []delta.Delta)
	OnGap     func(reason string)
	SaveEvery time.Duration
	Ephemeral bool
}

// Reader is a running binlog reader.
type Reader interface {
	Run(ctx context.Context, ready chan<- struct{}) error
	// Trouble says what keeps failing, "" when nothing.
	Trouble() string
}
