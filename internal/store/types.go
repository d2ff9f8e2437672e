package store

import (
	"sort"
	"time"
)

// Dialect names a storage backend family.
type Dialect string

const (
	Postgres Dialect = "postgres"
	MariaDB  Dialect = "mariadb"
	MySQL    Dialect = "mysql"
	SQLite   Dialect = "sqlite"
	Memory   Dialect = "memory"
)

// Shared reports whether the dialect's database is a server that several
// processes share (PostgreSQL, MariaDB, MySQL), rather than one process's
// own (a SQLite file, memory): only there can instances form a cluster.
func (d Dialect) Shared() bool { return d == Postgres || d == MariaDB || d == MySQL }

// LockMode is how shard ownership is coordinated.
type LockMode string

const (
	LockAuto     LockMode = "auto"
	LockRow      LockMode = "row"
	LockAdvisory LockMode = "advisory"
)

// ClusterConfig is the cluster-wide fact row: every runner must agree with it.
type ClusterConfig struct {
	ShardCount int
	Groups     []string
}

// Runner is one registered runner (one process taking part in the cluster).
type Runner struct {
	Address     string   // advertised host:port, unique
	ReplicaID   string   // POD_NAME or hostname-pid
	Groups      []string // shard groups hosted
	EntityTypes []string // entity types registered on this runner
	InspectAddr string   // host:port of the inspect/health HTTP endpoint, if any
	Version     string
	Healthy     bool
	Meta        string // JSON blob of resolved settings for status displays

	// Read-only fields filled by ListRunners.
	StartedAt     time.Time
	LastHeartbeat time.Time
	HeartbeatAge  time.Duration // DB now - LastHeartbeat, judged by the DB clock
}

// ShardLock is one row of the epoch ledger.
type ShardLock struct {
	Shard      string
	Owner      string // runner address; "" when released
	Epoch      int64
	AcquiredAt time.Time
	ExpiresAt  time.Time // zero in advisory mode
	Expired    bool      // judged by the DB clock (row mode)
}

// MessageState is the lifecycle of a persisted message.
type MessageState string

const (
	StatePending   MessageState = "pending"
	StateClaimed   MessageState = "claimed"
	StateProcessed MessageState = "processed"
	StateDead      MessageState = "dead"
)

// Message is a persisted request to an entity.
type Message struct {
	ID         int64 // assigned by the store, increasing in insertion order
	Shard      string
	EntityType string
	EntityID   string
	Tag        string
	Payload    []byte
	Headers    map[string]string
	DedupeKey  string // optional; unique among all messages
	ReplyTo    string // runner address waiting for the reply, optional
	// Delay defers delivery by this much, judged by the DB clock. DeliverAt,
	// when set, is an absolute time instead. Neither = deliverable now.
	Delay     time.Duration
	DeliverAt time.Time

	// Filled by the store.
	State          MessageState
	ClaimedBy      string
	ClaimEpoch     int64
	ClaimExpiresAt time.Time
	Attempts       int
	LastError      string
	CreatedAt      time.Time
	ProcessedAt    time.Time
}

// Reply is the final result of a message.
type Reply struct {
	RequestID int64
	Payload   []byte
	Error     []byte // errs.Encode of the handler error, nil on success
	CreatedAt time.Time
}

// EnqueueResult tells what Enqueue did.
type EnqueueResult struct {
	ID        int64
	Duplicate bool   // the dedupe key existed; ID is the earlier message's
	Reply     *Reply // the earlier message's final reply, if it has one
	// ClaimedEpoch > 0 when the message was inserted already claimed for the
	// caller (see EnqueueClaim).
	ClaimedEpoch int64
}

// EnqueueClaim asks Enqueue to insert the message already claimed by Owner,
// but only if Owner holds the message's shard lock row at Epoch; otherwise it
// is inserted pending as usual. This saves a round trip when the sender is the
// shard owner.
type EnqueueClaim struct {
	Owner    string
	Epoch    int64
	ClaimTTL time.Duration
}

// ClaimRequest asks for deliverable messages of the given shards and entity
// types. A shard counts only if its lock row also names Owner; the claim takes
// that row's epoch.
type ClaimRequest struct {
	Owner    string
	Types    []string // only these entity types; empty = claim nothing
	Shards   []string // the shards the caller holds; empty = claim nothing
	Limit    int
	ClaimTTL time.Duration
}

// Fence identifies the claim a write is made under.
type Fence struct {
	Owner string
	Epoch int64
}

// Completion finishes a claimed message: it becomes processed and its final
// reply is stored, atomically, only if the claim is still ours.
type Completion struct {
	MessageID int64
	Shard     string
	Fence     Fence
	Payload   []byte
	Error     []byte
}

// MessageFilter selects messages for listings.
type MessageFilter struct {
	State      MessageState // empty = any
	EntityType string
	EntityID   string
	Limit      int
}

// ShardDrain is drain health for one shard.
type ShardDrain struct {
	Shard             string
	Owner             string
	Pending           int           // deliverable now (due, pending or void-claimed)
	OldestDeliverable time.Duration // age (DB clock) of the oldest deliverable message
	Claimed           int           // messages under a live claim
	Dead              int
	// Types splits Pending by entity type (types with a deliverable
	// message only, ordered by type): a runner judges its own drain by the
	// types it hosts.
	Types []TypeBacklog
}

// AddShardType counts n deliverable messages of typ, the oldest age old,
// in d.Types.
func (d *ShardDrain) AddShardType(typ string, n int, old time.Duration) {
	for i := range d.Types {
		if d.Types[i].EntityType == typ {
			d.Types[i].Pending += n
			d.Types[i].OldestDeliverable = max(d.Types[i].OldestDeliverable, old)
			return
		}
	}
	d.Types = append(d.Types, TypeBacklog{EntityType: typ, Pending: n, OldestDeliverable: old})
	sort.Slice(d.Types, func(i, j int) bool { return d.Types[i].EntityType < d.Types[j].EntityType })
}

// TypeBacklog counts deliverable messages of one entity type.
type TypeBacklog struct {
	EntityType        string
	Pending           int
	OldestDeliverable time.Duration
}

// DrainStats is the store's view of how messages are draining.
type DrainStats struct {
	Now    time.Time
	Shards []ShardDrain
	Types  []TypeBacklog
	Dead   int
	// OldestUndelivered is the age of the oldest due, unprocessed message.
	OldestUndelivered time.Duration
}
