package cdc

import (
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/voltro/voltro/internal/config"
)

// Config says which database a feed watches and as which instance.
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
	// Buffer bounds each subscriber's queue (default 1024 deltas).
	Buffer int
	Logger *slog.Logger
}

// ConfigFromEnv reads DB_URL, DB_DIALECT, POD_NAME, CDC and VOLTRO_CDC_URL
// (internal/config reads them).
func ConfigFromEnv(env func(string) string) (Config, error) {
	f, err := config.Feed(env)
	return Config{URL: f.URL, Dialect: f.Dialect, ReplicaID: f.ReplicaID, ReplicationURL: f.ReplicationURL, DisableCDC: f.DisableCDC}, err
}

func (c Config) replicaID() string {
	if c.ReplicaID != "" {
		return c.ReplicaID
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return fmt.Sprintf("%s-%d", h, os.Getpid())
}
