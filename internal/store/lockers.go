package store

import (
	"context"
	"database/sql"
	"time"
)

// SQLDB is implemented by the SQL stores: the application pool as a
// database/sql handle, for features that keep their own small tables
// (change capture) and for the application's own writes. Schedules no
// longer use it: they are part of the contract (ScheduleStore).
type SQLDB interface {
	DB() *sql.DB
}

// WakeKind says what a Wake is about.
type WakeKind string

const (
	WakeMessage WakeKind = "message" // a message was enqueued (or replayed)
	WakeReply   WakeKind = "reply"   // a final reply was stored
)

// Wake is a push notification from a store with a native feed.
type Wake struct {
	Kind  WakeKind
	Shard string // for WakeMessage
	ID    int64  // message id (the request id for WakeReply)
}

// WakeListener is implemented by stores that can push wake-ups (PostgreSQL
// LISTEN/NOTIFY). ListenWakes blocks on a dedicated connection, calling fn for
// every wake, reconnecting on failure, until ctx ends. After a reconnect it
// calls fn with a zero Wake, meaning "you may have missed some: re-read".
type WakeListener interface {
	ListenWakes(ctx context.Context, fn func(Wake)) error
}

// ShardState is one shard as a survey sees it.
type ShardState struct {
	Shard string
	Owner string // ledger owner, "" if none
	Epoch int64
	// Free: nobody holds the shard right now (advisory: no session holds
	// its lock; row: no row, owner cleared, or lease expired).
	Free bool
}

// ShardSurveyor is implemented by lockers that can report, in one query,
// the ledger and the real lock state of many shards. A ledger owner whose
// shard is free has lost its session or lease: it crashed or is cut off.
type ShardSurveyor interface {
	Survey(ctx context.Context, shards []string) ([]ShardState, error)
}

// PresenceProber is implemented by lockers that, in advisory mode, hold a
// session lock naming their runner from NewLocker until Close or the end
// of their session. Absent returns the runners among those given whose
// presence lock nobody holds: no live locker session stands behind them,
// whatever their heartbeat row says (the process was killed, or its lock
// connection dropped). In row mode there is no session to probe and Absent
// returns nothing.
type PresenceProber interface {
	Absent(ctx context.Context, runners []string) ([]string, error)
	// Present reports whether this locker holds its own runner's presence
	// lock (taken at NewLocker and retried on every Heartbeat). While it
	// does not, another session stands behind the same address: an earlier
	// session of this runner not yet reaped, a frozen predecessor, or a
	// second live process with the same address. Row mode: always true.
	Present() bool
}

// Fencer is implemented by lockers whose locks live in a database session
// (advisory mode). Fence ends, through the database, every session except
// the caller's own that holds runner's presence lock or the lock of one of
// shards: the way to free the locks of a runner that is frozen (a stopped
// process keeps its session, so its locks, open) once its heartbeat is
// stale. It returns how many sessions it ended. A database that refuses
// for lack of a privilege returns an errs.CodePermission error. Row mode
// has no session to end (leases expire) and returns 0.
type Fencer interface {
	Fence(ctx context.Context, runner string, shards []string) (int, error)
}

// PresenceKey is the name a runner's presence lock is derived from; no
// shard id (group "/" index) can take this form.
func PresenceKey(runner string) string { return "@runner " + runner }

// BatchLocker is implemented by lockers that can take and release many
// shards in a few round trips instead of several per shard, so a runner
// taking over or handing over 150 shards (a restart, a failover, a join)
// does so in one pass. AcquireMany tries each shard once, without
// blocking, with Acquire's rules and effects (each shard taken gets a new
// epoch in the ledger), and returns the epochs of those it took; a shard
// another runner holds is simply absent. ReleaseMany releases each shard at
// its epoch as Release does.
type BatchLocker interface {
	AcquireMany(ctx context.Context, shards []string, ttl time.Duration) (map[string]int64, error)
	ReleaseMany(ctx context.Context, held map[string]int64) error
}
