// The change feed's side of the contract (internal/cdc): what its
// transports read from and keep in the database, behind small interfaces
// each store implements in its own changefeed.go with its own SQL, retry
// and error mapping. The feed itself speaks no SQL.

package store

import (
	"context"
	"slices"
	"strings"
)

// CDCOffsetsTable is the MariaDB table of binlog resume positions (one row
// per replica id), created by the mysql store's migration 0500. The binlog
// reader skips its own writes to it.
const CDCOffsetsTable = "_voltro_cdc_offsets"

// BinlogFollows says whether the binlog reader delivers table's changes:
// the application's tables and voltro's unprefixed ones do, the
// _voltro_-prefixed bookkeeping tables are skipped but for the
// introspection tables people follow (the dashboard, voltro watch).
func BinlogFollows(table string) bool {
	return !strings.HasPrefix(table, "_voltro_") || slices.Contains(IntrospectionTables, table)
}

// BinlogOffsets keeps the resume position of each binlog reader.
type BinlogOffsets interface {
	// LoadOffset returns the stored GTID position of replica; ok is false
	// when the replica has none yet.
	LoadOffset(ctx context.Context, replica string) (gtid string, ok bool, err error)
	// SaveOffset stores the position of replica.
	SaveOffset(ctx context.Context, replica string, serverID uint32, gtid string) error
	// ServerPosition is the server's binlog GTID position now.
	ServerPosition(ctx context.Context) (string, error)
}

// BinlogServer is what a binlog reader's source server says about its
// settings and the connected user, read by the store; judging them is the
// reader's business.
type BinlogServer struct {
	LogBin      bool
	Format      string // binlog_format
	RowImage    string // binlog_row_image
	RowMetadata string // binlog_row_metadata
	GTIDStrict  bool
	ServerID    uint32
	Version     string
	User        string // CURRENT_USER()
	// Grants are the user's grant lines, upper-cased.
	Grants []string
}

// SubscriberLocks is one instance's session of subscription locks (the
// PostgreSQL feed): a shared lock per table it subscribes to, and the
// exclusive lock that only the last subscriber anywhere gets, to remove the
// table's triggers while holding it. The locks end with the session.
type SubscriberLocks interface {
	HoldShared(ctx context.Context, table string) error
	ReleaseShared(ctx context.Context, table string) error
	// TryExclusive reports whether nobody else holds a lock on table.
	TryExclusive(ctx context.Context, table string) (bool, error)
	ReleaseExclusive(ctx context.Context, table string) error
	IsClosed() bool
	Close(ctx context.Context) error
}
