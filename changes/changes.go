package changes

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/cdc/cdcpub"
)

func init() { cdcpub.Wrap = func(f *cdc.Feed) any { return wrap(f) } }

// Config says which database a feed watches and as which instance.
// ConfigFromEnv fills it from the deployment environment.
type Config struct {
	// URL is the shared database (DB_URL); Dialect overrides its scheme
	// (DB_DIALECT).
	URL     string
	Dialect string
	// ReplicaID is the stable name of this instance (POD_NAME). It keys the
	// binlog resume position and derives the binlog server_id. Empty means
	// hostname-pid, which is not stable across restarts.
	ReplicaID string
	// DisableCDC (CDC=0) uses inline emit on every dialect: only writes made
	// through this feed reach this feed's subscribers.
	DisableCDC bool
	// ReplicationURL optionally names a different MariaDB user for the
	// binlog reader (VOLTRO_CDC_URL); by default the URL's user reads it.
	ReplicationURL string
	// DB optionally shares an already open pool; the feed does not close it.
	DB *sql.DB
	// Ephemeral feeds (a CLI watch) keep no binlog resume position: they
	// start at the current position every time.
	Ephemeral bool
	// TriggerLinger (PostgreSQL) is how long a table's change trigger stays
	// after its last subscription on this instance ends (default 10 s;
	// negative: removed at once). Close removes them at once.
	TriggerLinger time.Duration
	// Buffer bounds each subscriber's queue (default 1024 deltas). A
	// subscriber that falls further behind gets one Resync delta instead.
	Buffer int
	// Logger receives the boot line and the transport's warnings (default
	// slog.Default()).
	Logger *slog.Logger
}

// Open connects, resolves the transport and starts it: changes committed
// after it returns are delivered to subscribers. It is New followed by
// Start.
func Open(ctx context.Context, cfg Config) (*Feed, error) {
	f, err := cdc.Open(ctx, cdc.Config(cfg))
	if err != nil {
		return nil, err
	}
	return wrap(f), nil
}

// New connects and resolves the transport (checking the binlog
// preconditions on MariaDB) without streaming; subscribe, then call Start,
// so a restarted MariaDB replica's catch-up from its stored position reaches
// the subscribers.
func New(ctx context.Context, cfg Config) (*Feed, error) {
	f, err := cdc.New(ctx, cdc.Config(cfg))
	if err != nil {
		return nil, err
	}
	return wrap(f), nil
}

// ConfigFromEnv reads DB_URL, DB_DIALECT, POD_NAME, CDC (1 or 0) and
// VOLTRO_CDC_URL; pass os.Getenv.
func ConfigFromEnv(env func(string) string) (Config, error) {
	c, err := cdc.ConfigFromEnv(env)
	return Config(c), err
}
