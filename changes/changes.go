package changes

import (
	"context"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/cdc/delta"
)

// Feed is the change feed of one instance; see the package documentation.
// Its methods: Start, Close, Subscribe, Insert, Update, Delete, Tx, DB,
// SSEHandler, and for status displays Dialect, Transport, Flavor, BootLine,
// ServerID, ReplicaID, Fallback, Overflows.
type Feed = cdc.Feed

// Tx is a transaction of the data API: its deltas are published only if it
// commits.
type Tx = cdc.Tx

// Config says which database a feed watches and as which instance
// (URL, Dialect, ReplicaID, DisableCDC, ReplicationURL, DB, Buffer, Logger).
type Config = cdc.Config

// SSEOptions tunes Feed.SSEHandler: the tables it may serve (none by
// default), a per-request check, the heartbeat.
type SSEOptions = cdc.SSEOptions

// Delta is one row change of one table, or a resync signal.
type Delta = delta.Delta

// Op is what happened to a row.
type Op = delta.Op

// Row is one row as column name -> value.
type Row = delta.Row

// Filter keeps deltas whose row has each listed column equal to the text.
type Filter = delta.Filter

// Transport is how changes travel: Notify, Binlog, Inline or Bus.
type Transport = cdc.Transport

// The operations a Delta carries.
const (
	Insert = delta.Insert
	Update = delta.Update
	Delete = delta.Delete
	Resync = delta.Resync
)

// The transports.
const (
	Notify = cdc.Notify
	Binlog = cdc.Binlog
	Inline = cdc.Inline
	Bus    = cdc.Bus
)

// Open connects, resolves the transport and starts it: changes committed
// after it returns are delivered to subscribers.
func Open(ctx context.Context, cfg Config) (*Feed, error) { return cdc.Open(ctx, cfg) }

// New connects and resolves the transport without streaming; subscribe,
// then call Start, so a restarted MariaDB replica's catch-up from its stored
// position reaches the subscribers.
func New(ctx context.Context, cfg Config) (*Feed, error) { return cdc.New(ctx, cfg) }

// ConfigFromEnv reads DB_URL, DB_DIALECT, POD_NAME, CDC and VOLTRO_CDC_URL.
func ConfigFromEnv(env func(string) string) (Config, error) { return cdc.ConfigFromEnv(env) }

// ParseFilter reads COL=VALUE terms into a Filter.
func ParseFilter(terms []string) (Filter, error) { return delta.ParseFilter(terms) }
