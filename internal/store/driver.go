package store

import (
	"context"
	"time"
)

// Driver is the storage contract: one interface, composed of the groups
// every store implements (memory, SQLite, PostgreSQL, MariaDB/MySQL), so
// no caller ever asks whether a store "has" workflows or schedules. What
// only some stores can do (writes in the caller's transaction, batched
// starts, pushed wake-ups, an exclusive file, benchmark probes) comes from
// Capabilities, never from a type assertion. storetest.Exercise pins the
// semantics of every group on every store.
//
// Times that matter for correctness (heartbeats, leases, claim expiry,
// deliver_at) are judged by the store's own clock, never the caller's
// (each store takes a test clock as an option; see storetest).
//
// Error contract: a fenced write returns an error matching errs.ErrFenced; a
// missing row errs.ErrNotFound; a storage outage wraps the driver's error with
// errs.ErrUnavailable where the driver can tell.
type Driver interface {
	Cluster
	Messages
	Workflows
	Introspection
	Schedules
	Queues
	Retention
	Overview
	Backlog
	// Capabilities says what this store offers beyond the contract. It is
	// the same value for the store's whole life.
	Capabilities() Capabilities
}

// Cluster is the group of the cluster's own facts: the store itself (its
// dialect, migrations, clock and health), the cluster config and secret,
// the runner rows, and the shard locks with their epoch ledger.
type Cluster interface {
	Dialect() Dialect
	// Migrate applies the embedded, versioned migrations not yet applied. It
	// is safe when several processes call it at once (it runs under a lock).
	Migrate(ctx context.Context) error
	// Now is the store's clock.
	Now(ctx context.Context) (time.Time, error)
	// Ping proves the application pool serves a query that touches a voltro
	// table (a Galera node without quorum answers SELECT 1 but not this).
	Ping(ctx context.Context) error
	// ResolveLockMode turns the requested mode into the one this store will
	// use, with a human reason ("wsrep/Galera cluster detected", …).
	// Requested auto picks row on Galera/PXC and on SQLite-family stores and
	// advisory elsewhere; advisory on a SQLite-family store resolves to row.
	ResolveLockMode(ctx context.Context, requested LockMode) (LockMode, string, error)
	Close() error

	// EnsureClusterConfig stores cfg if no config row exists and returns the
	// stored row either way; the caller compares.
	EnsureClusterConfig(ctx context.Context, cfg ClusterConfig) (ClusterConfig, error)
	// EnsureClusterSecret stores candidate as the cluster's runner-RPC
	// secret if none is stored and returns the stored one either way: the
	// first writer wins and concurrent first boots agree. SQL stores keep
	// it in the database (the trust root every instance shares); stores
	// that never cluster (memory, SQLite) may keep it in the process.
	EnsureClusterSecret(ctx context.Context, candidate string) (string, error)

	// RegisterRunner upserts by address; started_at and last_heartbeat take
	// the store's now.
	RegisterRunner(ctx context.Context, r Runner) error
	// ListRunners returns every registered runner with HeartbeatAge judged by
	// the store's clock, ordered by address.
	ListRunners(ctx context.Context) ([]Runner, error)
	DeleteRunner(ctx context.Context, address string) error

	// NewLocker opens the reserved connection (apart from the app pool) that
	// carries the shard locks and the heartbeat of runner owner, in a mode
	// already resolved by ResolveLockMode (never LockAuto).
	NewLocker(ctx context.Context, mode LockMode, owner string) (Locker, error)
	// ShardLocks returns the epoch ledger, ordered by shard.
	ShardLocks(ctx context.Context) ([]ShardLock, error)
}

// Messages is the group of persisted messages to entities and their
// replies: enqueued with a dedupe key, claimed under a fenced claim,
// completed, released, retried and dead-lettered.
type Messages interface {
	// Enqueue persists a message (see Message for Delay/DeliverAt). A repeated
	// non-empty DedupeKey inserts nothing and returns the earlier message's ID
	// with Duplicate set and its final reply if it has one. With claim != nil
	// and no delay, the message is inserted already claimed by claim.Owner if
	// and only if the shard's lock row names claim.Owner at claim.Epoch (then
	// ClaimedEpoch is set and Attempts is 1).
	Enqueue(ctx context.Context, m *Message, claim *EnqueueClaim) (EnqueueResult, error)
	// Claim returns up to Limit deliverable messages in ID order and marks them
	// claimed by req.Owner with the shard's current epoch, expiring after
	// ClaimTTL, incrementing Attempts. Deliverable = due (deliver_at <= now),
	// of one of req.Types, on one of req.Shards whose lock row names req.Owner, and
	// either pending or claimed under a void claim (expired, or an epoch older
	// than the shard's). Concurrent Claims never return the same message twice
	// while its claim is live.
	Claim(ctx context.Context, req ClaimRequest) ([]Message, error)
	// Complete marks a claimed message processed and stores its final reply,
	// atomically, only while the claim (owner, epoch) is live and the shard's
	// lock row still names that owner at that epoch. Otherwise errs.ErrFenced
	// and nothing changes.
	Complete(ctx context.Context, c Completion) error
	// Release returns claimed messages to pending (synchronous un-claim). Only
	// claims made under f are touched; it works after the shard was lost.
	Release(ctx context.Context, f Fence, ids []int64) error
	// RecordAttempt notes a failed delivery of a claimed message under f:
	// Attempts+1 and LastError. Claim stays.
	RecordAttempt(ctx context.Context, f Fence, id int64, lastError string) error
	// DeadLetter moves a claimed message to dead with lastError and stores a
	// final reply carrying replyErr, fenced like Complete.
	DeadLetter(ctx context.Context, f Fence, shard string, id int64, lastError string, replyErr []byte) error
	// ReplayDead returns a dead message to pending with Attempts 0 and removes
	// its stored reply. errs.ErrNotFound if there is no dead message id.
	ReplayDead(ctx context.Context, id int64) error
	// ExtendClaims pushes the expiry of every live claim of owner to now+ttl.
	ExtendClaims(ctx context.Context, owner string, ttl time.Duration) error
	// NextDelivery is how long (store clock) until the earliest pending,
	// not-yet-due message of the given types on shards whose lock rows name
	// owner; ok=false when there is none.
	NextDelivery(ctx context.Context, owner string, types []string) (wait time.Duration, ok bool, err error)
	GetMessage(ctx context.Context, id int64) (Message, error)
	ListMessages(ctx context.Context, f MessageFilter) ([]Message, error)
	// GetReply returns the final reply of request id, or nil when there is none yet.
	GetReply(ctx context.Context, requestID int64) (*Reply, error)
	// DrainStats summarises pending, claimed and dead messages per shard and
	// per entity type, by the store's clock.
	DrainStats(ctx context.Context) (DrainStats, error)
}

// Locker holds shard locks and the runner heartbeat on one reserved
// connection. Every successful Acquire increments the shard's epoch in the
// ledger. Lockers are used by one goroutine at a time. Every store's locker
// has every part: one without sessions answers the presence and fencing
// parts as row mode does, and one without batch statements takes many
// shards one by one (OneByOne).
type Locker interface {
	ShardSurveyor
	PresenceProber
	Fencer
	BatchLocker
	Mode() LockMode
	// Acquire tries once, without blocking, to take shard. ok=false when
	// another runner holds it (advisory: the session lock; row: an unexpired
	// lease of another owner).
	Acquire(ctx context.Context, shard string, ttl time.Duration) (epoch int64, ok bool, err error)
	// Refresh confirms every shard in held (shard -> epoch): row mode extends
	// the leases to now+ttl. It returns the shards no longer held at that
	// epoch. An error means the reserved connection is unusable: treat every
	// shard as lost.
	Refresh(ctx context.Context, held map[string]int64, ttl time.Duration) (lost []string, err error)
	// Release gives up shard if still held at epoch (ledger owner cleared).
	Release(ctx context.Context, shard string, epoch int64) error
	// Heartbeat stamps the runner row with the store's now over the reserved
	// connection. errs.ErrNotFound when the row is gone (re-register).
	Heartbeat(ctx context.Context, address string) error
	// Close releases every lock it holds and the reserved connection.
	Close() error
}
