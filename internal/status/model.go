package status

import "time"

// SchemaVersion is the version of the JSON shape; it changes only when a
// field is removed or changes meaning.
const SchemaVersion = 1

// Report is the whole status snapshot.
type Report struct {
	SchemaVersion int       `json:"schemaVersion"`
	GeneratedAt   time.Time `json:"generatedAt"`
	Source        Source    `json:"source"`
	// StaleAfterSeconds: a heartbeat older than this marks an instance stale
	// (3 × VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT).
	StaleAfterSeconds float64    `json:"staleAfterSeconds"`
	ProcessFilter     string     `json:"processFilter"`
	Instances         []Instance `json:"instances"`
	// Duplicates are identities two live instances share that must be
	// unique: a replica id (POD_NAME), a binlog server_id.
	Duplicates []Duplicate `json:"duplicates"`
	Shared     *Shared     `json:"shared"` // null without a readable database
	// Retention is the retention in force, as the instances asked report
	// it; null when none reported one.
	Retention *RetentionInForce `json:"retention"`
}

// RetentionInForce is the retention the cluster applies: that of the
// instance holding the retention shard (it alone deletes), or, when none
// of those asked does, of the first that answered.
type RetentionInForce struct {
	// Runs (finished runs and processed messages) and DeadLetters as set
	// ("7d", "36h"; "forever" keeps them), and in seconds (0: forever).
	Runs               string  `json:"runs"`
	DeadLetters        string  `json:"deadLetters"`
	RunsSeconds        float64 `json:"runsSeconds"`
	DeadLettersSeconds float64 `json:"deadLettersSeconds"`
	// SweptBy is the instance that sweeps; null when no instance asked
	// holds the retention shard.
	SweptBy *Identity `json:"sweptBy"`
	// LastPassAgeSeconds is how long ago the sweeping instance finished a
	// pass; null before its first.
	LastPassAgeSeconds *float64 `json:"lastPassAgeSeconds"`
	// OldestSeconds: age of the oldest row kept by kind (runs, processed,
	// dead), as the sweeping instance last read it; empty when unknown.
	OldestSeconds map[string]float64 `json:"oldestSeconds"`
	// Differ lists the instances whose own setting differs: it applies
	// only while they sweep.
	Differ []Identity `json:"differ"`
}

// Duplicate is one identity shared by several live instances.
type Duplicate struct {
	Kind      string     `json:"kind"` // replicaId | binlogServerId
	Value     string     `json:"value"`
	Instances []Identity `json:"instances"`
}

// Source says where instances were discovered.
type Source struct {
	Kind        string `json:"kind"`     // "runners" (runners table) or "registry" (local directory)
	Dialect     string `json:"dialect"`  // of DB_URL; "" when DB_URL is not set
	Database    string `json:"database"` // database name or SQLite file
	RegistryDir string `json:"registryDir"`
}

// Instance is one row.
type Instance struct {
	ReplicaID      string `json:"replicaId"`
	Process        string `json:"process"`
	ProcessSource  string `json:"processSource"` // meta | registry | replicaId
	PID            int    `json:"pid"`           // 0 when unknown
	RunnerAddress  string `json:"runnerAddress"`
	InspectAddress string `json:"inspectAddress"`
	Dialect        string `json:"dialect"`
	// Tier: full, inline-only (shards move, changes do not cross
	// instances), single-process, none; "unknown" when unreachable and not
	// inferable.
	Tier      string `json:"tier"`
	CDCFlavor string `json:"cdcFlavor"`
	// CDCProblem says why the change feed is degraded (a fallback to
	// inline emit, a failing binlog stream); "" when it is not.
	CDCProblem   string `json:"cdcProblem"`
	Coordination string `json:"coordination"`
	ShardLock    string `json:"shardLock"`
	// ShardLockReason says why the instance coordinates shards that way
	// (the store's resolution of VOLTRO_WORKFLOW_SHARD_LOCK); "" when not asked.
	ShardLockReason   string    `json:"shardLockReason"`
	BinlogServerID    *uint32   `json:"binlogServerId"`
	OwnedShards       int       `json:"ownedShards"`
	OwnedShardsSource string    `json:"ownedShardsSource"` // inspect | ledger | none
	Ready             *bool     `json:"ready"`             // null when not asked (unreachable)
	Problems          []Problem `json:"problems"`
	// Notes are what the instance sees that its leaving traffic would not
	// fix, e.g. a frozen peer whose session the database refused to end.
	Notes []Problem `json:"notes,omitempty"`
	// HeartbeatAgeSeconds is judged by the database clock; null without a
	// runner row.
	HeartbeatAgeSeconds *float64 `json:"heartbeatAgeSeconds"`
	Reachable           bool     `json:"reachable"`
	UnreachableReason   string   `json:"unreachableReason"`
	// AnsweredBy is the instance that answered at this row's inspect
	// address when it was not this row's (another replica or runner
	// address); its answer is not used. Null otherwise.
	AnsweredBy *Identity `json:"answeredBy"`
	// TokenWithheld says why VOLTRO_INSPECT_TOKEN was not sent to the
	// instance's inspect address (its host is not a trusted inspect host:
	// loopback, or VOLTRO_INSPECT_TRUSTED_HOSTS); the instance was asked
	// without it. "" when the token was sent, or none is set.
	TokenWithheld string `json:"tokenWithheld"`
	// Duplicate: the instance shares its replica id or binlog server_id
	// with another live instance (Report.Duplicates says which).
	Duplicate bool `json:"duplicate"`
	// sameReplica: the runners the instance itself sees live with its
	// replica id (inspect), which the report may not list (--process).
	sameReplica   []string
	Stale         bool     `json:"stale"`
	StaleReason   string   `json:"staleReason"`
	LocalhostRisk bool     `json:"localhostRisk"`
	LocalhostFix  string   `json:"localhostFix"`
	EntityTypes   []string `json:"entityTypes"`
	Version       string   `json:"version"`
	Source        string   `json:"source"` // runners | registry
	// Retention is the instance's retention setting and sweeper; null when
	// not asked or not reported.
	Retention *InstanceRetention `json:"retention"`
}

// InstanceRetention is one instance's retention (its inspect document).
type InstanceRetention struct {
	Runs               string  `json:"runs"`
	DeadLetters        string  `json:"deadLetters"`
	RunsSeconds        float64 `json:"runsSeconds"`
	DeadLettersSeconds float64 `json:"deadLettersSeconds"`
	// Sweeping: the instance holds the retention shard.
	Sweeping           bool               `json:"sweeping"`
	LastPassAgeSeconds *float64           `json:"lastPassAgeSeconds"`
	OldestSeconds      map[string]float64 `json:"oldestSeconds"`
}

// Identity names an instance: its replica id and runner address.
type Identity struct {
	ReplicaID     string `json:"replicaId"`
	RunnerAddress string `json:"runnerAddress"`
}

// Problem is one reason an instance is not ready (inspect.Problem kinds).
type Problem struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// Shared is the footer: state every instance shares through the database.
type Shared struct {
	// ActiveWindowSeconds is how far back "recent" reaches (300).
	ActiveWindowSeconds float64         `json:"activeWindowSeconds"`
	Schedules           *ScheduleState  `json:"schedules"` // null: no schedule has run on the database
	Workflows           *WorkflowCounts `json:"workflows"` // null: no workflow tables
	Messages            MessageState    `json:"messages"`
	Errors              []string        `json:"errors"` // parts that could not be read
}

// ScheduleState is read from _voltro_schedule_runs and _voltro_schedule_claims.
type ScheduleState struct {
	// ActiveReplicas are the replicas with schedule runs in the window.
	ActiveReplicas []ReplicaRuns `json:"activeReplicas"`
	// RecentClaims counts claim rows taken in the window.
	RecentClaims int `json:"recentClaims"`
	// LatestClaims is the newest claim of each schedule.
	LatestClaims []Claim `json:"latestClaims"`
	// Running counts runs with status running, by replica.
	Running          int           `json:"running"`
	RunningByReplica []ReplicaRuns `json:"runningByReplica"`
}

// ReplicaRuns counts schedule runs of one replica.
type ReplicaRuns struct {
	ReplicaID string `json:"replicaId"`
	Runs      int    `json:"runs"`
}

// Claim is a schedule's newest claim row.
type Claim struct {
	Schedule   string  `json:"schedule"`
	ReplicaID  string  `json:"replicaId"`
	AgeSeconds float64 `json:"ageSeconds"` // since claimedAt, database clock
}

// WorkflowCounts counts workflow runs that are not finished.
type WorkflowCounts struct {
	Running   int `json:"running"`
	Suspended int `json:"suspended"`
}

// MessageState is the message backlog (store DrainStats).
type MessageState struct {
	DeadLetters int `json:"deadLetters"`
	// OldestUndeliveredSeconds: age of the oldest due, unprocessed message; 0 when none.
	OldestUndeliveredSeconds float64 `json:"oldestUndeliveredSeconds"`
	// UnhostedBacklog: deliverable messages of entity types no live runner
	// hosts (a cluster condition; no instance's readiness), by type.
	UnhostedBacklog []UnhostedType `json:"unhostedBacklog"`
}

// UnhostedType is the backlog of one entity type no live runner hosts.
type UnhostedType struct {
	EntityType    string  `json:"entityType"`
	Messages      int     `json:"messages"`
	OldestSeconds float64 `json:"oldestSeconds"`
}
