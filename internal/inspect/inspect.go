package inspect

import (
	"fmt"
	"sort"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// Paths of the inspect server.
const (
	PathLive          = "/_voltro/health/live"
	PathReady         = "/_voltro/health/ready"
	PathInspect       = "/_voltro/inspect/cluster"
	PathClusterHealth = "/_voltro/health/cluster" // the cluster health route
)

// OwnedShard is one held shard with its epoch.
type OwnedShard struct {
	Shard string `json:"shard"`
	Epoch int64  `json:"epoch"`
}

// Doc is the per-instance inspect document.
type Doc struct {
	ReplicaID     string            `json:"replicaId"`
	RunnerAddress string            `json:"runnerAddress"`
	InspectAddr   string            `json:"inspectAddress"`
	Dialect       string            `json:"dialect"`
	Tier          string            `json:"tier"`
	RunnerStorage string            `json:"runnerStorage"`
	CDCFlavor     string            `json:"cdcFlavor"`
	Coordination  string            `json:"coordination"`
	ShardLock     ShardLockDoc      `json:"shardLock"`
	ServerID      uint32            `json:"serverId,omitempty"`
	LocalhostRisk bool              `json:"localhostRisk"`
	OwnedShards   []OwnedShard      `json:"ownedShards"`
	EntityTypes   []string          `json:"entityTypes"`
	LiveRunners   []string          `json:"liveRunners"`
	Suspects      []string          `json:"suspectRunners,omitempty"`
	FrozenFenced  int64             `json:"frozenRunnersFenced"`
	StaleRunners  int               `json:"staleRunners"`
	Health        Health            `json:"health"`
	Pool          PoolDoc           `json:"pool"`
	Version       string            `json:"version"`
	UptimeSeconds float64           `json:"uptimeSeconds"`
	RPCRefused    int64             `json:"rpcRefused"`
	Extra         map[string]string `json:"extra,omitempty"`
	// Retention is the retention in force on this instance and its
	// sweeper's state.
	Retention *RetentionDoc `json:"retention,omitempty"`
}

// ShardLockDoc says how shard ownership is coordinated and why.
type ShardLockDoc struct {
	Requested string `json:"requested"`
	Mode      string `json:"mode"`
	Reason    string `json:"reason"`
	Healthy   bool   `json:"healthy"`
}

// PoolDoc is the application pool's health.
type PoolDoc struct {
	Healthy  bool      `json:"healthy"`
	LastOK   time.Time `json:"lastOk"`
	Failures int64     `json:"probeFailures"`
	Error    string    `json:"error,omitempty"`
}

// Problem is one reason the instance is not ready.
type Problem struct {
	Kind   string `json:"kind"` // database, locks, pool, stalled_shard, read_loop, unacquired
	Detail string `json:"detail"`
}

// Health is the readiness verdict with its evidence.
type Health struct {
	Ready    bool      `json:"ready"`
	Problems []Problem `json:"problems,omitempty"`
	// Notes are facts this instance sees that leaving traffic would not
	// fix (a frozen peer whose session the database refused to end): they
	// are in the body, never in the verdict.
	Notes []Problem `json:"notes,omitempty"`
	Drain Drain     `json:"drain"`
}

// Drain is drain health for this runner and the cluster backlog it can see.
type Drain struct {
	OwnedShards        int               `json:"ownedShards"`
	Pending            int               `json:"pending"`
	Claimed            int               `json:"claimed"`
	Dead               int               `json:"dead"`
	OldestDeliverableS float64           `json:"oldestDeliverableSeconds"`
	OldestUndeliveredS float64           `json:"oldestUndeliveredSeconds"`
	UnhostedBacklog    map[string]int    `json:"unhostedBacklog,omitempty"` // shown, not judged: a cluster condition
	StalledShards      []string          `json:"stalledShards,omitempty"`
	UnacquiredShards   []string          `json:"unacquiredShards,omitempty"`
	LastReadLoopAgoS   float64           `json:"lastReadLoopSecondsAgo"`
	ReadLoopError      string            `json:"readLoopError,omitempty"`
	InFlight           int               `json:"inFlight"`
	Counters           map[string]int64  `json:"counters"`
	PerShard           []ShardDrainView  `json:"perShard,omitempty"`
	Types              map[string]string `json:"types,omitempty"`
}

// ShardDrainView is one owned shard's backlog.
type ShardDrainView struct {
	Shard              string  `json:"shard"`
	Epoch              int64   `json:"epoch"`
	Pending            int     `json:"pending"`
	Claimed            int     `json:"claimed"`
	OldestDeliverableS float64 `json:"oldestDeliverableSeconds"`
}

// Readiness problem kinds (Problem.Kind in Health).
const (
	ProblemDatabase     = "database"      // ping or drain statistics failed
	ProblemPool         = "pool"          // the pool has not served a query lately
	ProblemLocks        = "locks"         // shard lock storage unhealthy
	ProblemIdentity     = "identity"      // the cluster refused this runner's identity
	ProblemReadLoop     = "read_loop"     // the read loop stopped running
	ProblemStalledShard = "stalled_shard" // owned shards with old deliverable messages
	ProblemUnacquired   = "unacquired"    // assigned shards not acquired
)

// Cluster condition kinds.
const (
	ConditionUnhostedType = "unhosted_type" // messages wait for an entity type no live runner hosts
	ConditionFrozenRunner = "frozen_runner" // a runner's heartbeat is stale, its locks held, and its session could not be ended
	ConditionUnknown      = "unknown"       // the database could not be read to judge
)

// ClusterCondition is one thing wrong with the cluster as a whole.
type ClusterCondition struct {
	Kind          string  `json:"kind"`
	EntityType    string  `json:"entityType,omitempty"`
	Runner        string  `json:"runner,omitempty"`
	Messages      int     `json:"messages,omitempty"`
	OldestSeconds float64 `json:"oldestSeconds,omitempty"`
	Detail        string  `json:"detail"`
}

// ClusterHealth is the verdict on the cluster, as one instance reads it
// from the database.
type ClusterHealth struct {
	Healthy    bool               `json:"healthy"`
	Conditions []ClusterCondition `json:"conditions"`
	// HostedTypes are the entity types live runners host; LiveRunners those
	// runners (healthy, heartbeat younger than three heartbeats).
	HostedTypes []string `json:"hostedTypes"`
	LiveRunners []string `json:"liveRunners"`
	ReplicaID   string   `json:"replicaId"` // the instance that answered
	// StaleRunners counts runner rows past heartbeat expiry, not pruned yet
	// (they are removed after 60 heartbeats); PrunedRunners how many rows
	// the answering instance removed.
	StaleRunners  int   `json:"staleRunners"`
	PrunedRunners int64 `json:"prunedRunners"`
}

// UnhostedConditions turns the backlog of every type hosted does not name
// into conditions, ordered by type.
func UnhostedConditions(ds store.DrainStats, hosted map[string][]string) []ClusterCondition {
	out := []ClusterCondition{}
	for _, tb := range ds.Types {
		if tb.Pending == 0 || len(hosted[tb.EntityType]) > 0 {
			continue
		}
		out = append(out, ClusterCondition{
			Kind: ConditionUnhostedType, EntityType: tb.EntityType, Messages: tb.Pending, OldestSeconds: tb.OldestDeliverable.Seconds(),
			Detail: fmt.Sprintf("%d message(s) for entity type %q wait and no live runner hosts that type (oldest %s); deploy a runner that registers it, or dead-letter them: voltro messages dead --type %s",
				tb.Pending, tb.EntityType, tb.OldestDeliverable.Round(time.Second), tb.EntityType),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].EntityType < out[j].EntityType })
	return out
}

// RetentionDoc is the retention part of the inspect document.
type RetentionDoc struct {
	// Runs and DeadLetters are the retention in force, as configured
	// ("7d"; "forever" for 0), and in seconds (0: off).
	Runs               string  `json:"runs"`
	DeadLetters        string  `json:"deadLetters"`
	RunsSeconds        float64 `json:"runsSeconds"`
	DeadLettersSeconds float64 `json:"deadLettersSeconds"`
	// RunnersSeconds: how long a silent runner's row is kept.
	RunnersSeconds float64 `json:"runnersSeconds"`
	// Shard is the retention shard; Sweeping says this instance holds it
	// (it is the one that sweeps).
	Shard    string `json:"shard"`
	Sweeping bool   `json:"sweeping"`
	Passes   int64  `json:"passes"`
	// LastPassAt (and how long ago it was), LastPassSeconds and
	// LastPassRows describe this instance's last pass; null, 0, 0 before
	// one.
	LastPassAt         *time.Time `json:"lastPassAt"`
	LastPassAgeSeconds *float64   `json:"lastPassAgeSeconds"`
	LastPassSeconds    float64    `json:"lastPassSeconds"`
	LastPassRows       int64      `json:"lastPassRows"`
	LastError          string     `json:"lastError,omitempty"`
	// Deleted counts rows this instance deleted since it started, by table.
	Deleted map[string]int64 `json:"deleted"`
	// OldestSeconds is the age of the oldest row kept after the last pass,
	// by kind (runs, processed, dead); absent when none is kept.
	OldestSeconds map[string]float64 `json:"oldestSeconds"`
}
