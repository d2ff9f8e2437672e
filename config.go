package voltro

// Config: the configuration as a Go struct, for apps that set it in code.
// Each field stands for one environment variable; WithConfig lays the set
// fields, field by field, over what the environment sets, so the same
// validation, defaults and messages apply, and a deployment that sets the
// variables keeps working for every field the code leaves zero.

import (
	"strings"
	"time"

	"github.com/voltro/voltro/internal/config"
)

// Config is the configuration as a struct, an alternative to the
// environment: voltro.New(ctx, voltro.WithConfig(cfg)). Each field stands
// for the variable named beside it (docs/configuration.md says what each
// does and its default).
//
// Precedence, per setting: an option that names it (WithDB for the
// database URL), then a non-zero Config field, then the environment
// variable (the process environment, or WithEnv's), then the default. A
// zero field leaves the setting to the environment, so a deployment
// contract (POD_NAME, DB_URL, … set by the platform) keeps working for
// everything the code does not set; to ignore the process environment
// altogether, add WithEnv(func(string) string { return "" }). Values are
// validated as the variables are, and an error names the variable.
type Config struct {
	DatabaseURL string // DB_URL
	Dialect     string // DB_DIALECT
	ReplicaID   string // POD_NAME: this instance's stable id

	RunnerHost    string        // VOLTRO_WORKFLOW_RUNNER_HOST (else POD_IP)
	RunnerPort    int           // VOLTRO_WORKFLOW_RUNNER_PORT
	SingleHost    bool          // VOLTRO_SINGLE_HOST=1
	ShardLock     string        // VOLTRO_WORKFLOW_SHARD_LOCK: auto, row or advisory
	RunnerStorage string        // VOLTRO_WORKFLOW_RUNNER_STORAGE: sql or memory
	Heartbeat     time.Duration // VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT
	PollInterval  time.Duration // VOLTRO_POLL_INTERVAL
	Shards        int           // VOLTRO_SHARDS: shards per group
	ShardGroups   []string      // VOLTRO_SHARD_GROUPS

	// Retention is VOLTRO_RETENTION: how long a finished run and a
	// processed message are kept. Negative keeps them for ever (the
	// variable's 0).
	Retention time.Duration
	// DeadLetterRetention is VOLTRO_DEAD_LETTER_RETENTION; negative keeps
	// dead letters for ever.
	DeadLetterRetention time.Duration

	ClusterSecret       string // VOLTRO_CLUSTER_SECRET
	RunnerTLSCert       string // VOLTRO_RUNNER_TLS_CERT: PEM file
	RunnerTLSKey        string // VOLTRO_RUNNER_TLS_KEY: PEM file
	RunnerTLSCA         string // VOLTRO_RUNNER_TLS_CA: PEM file (mutual TLS)
	RunnerTLSServerName string // VOLTRO_RUNNER_TLS_SERVER_NAME
	RPCMaxBody          int    // VOLTRO_RPC_MAX_BODY, bytes

	InspectAddr  string // VOLTRO_INSPECT_ADDR
	InspectToken string // VOLTRO_INSPECT_TOKEN
	AdminToken   string // VOLTRO_ADMIN_TOKEN
	ProcessName  string // VOLTRO_PROCESS_NAME
	RegistryDir  string // VOLTRO_REGISTRY_DIR

	ScheduleCoordination ScheduleCoordination // VOLTRO_SCHEDULE_COORDINATION
	CDCURL               string               // VOLTRO_CDC_URL
	DisableCDC           bool                 // CDC=0
}

// WithConfig sets the configuration from cfg, over the environment (see
// Config for the precedence). Given more than once, the last wins.
func WithConfig(cfg Config) Option {
	return func(o *appOptions) {
		o.Settings = func(s *config.Settings) { s.Override(cfg.settings()) }
	}
}

// settings is cfg as internal settings, field by field; a zero field
// stays zero, leaving the setting to the environment.
func (cfg Config) settings() config.Settings {
	return config.Settings{
		DatabaseURL: cfg.DatabaseURL, Dialect: cfg.Dialect, ReplicaID: cfg.ReplicaID,
		RunnerHost: cfg.RunnerHost, RunnerPort: cfg.RunnerPort, SingleHost: cfg.SingleHost,
		ShardLock: cfg.ShardLock, RunnerStorage: cfg.RunnerStorage,
		Heartbeat: cfg.Heartbeat, PollInterval: cfg.PollInterval,
		Shards: cfg.Shards, ShardGroups: strings.Join(cfg.ShardGroups, ","),
		Retention: cfg.Retention, DeadLetterRetention: cfg.DeadLetterRetention,
		ClusterSecret: cfg.ClusterSecret, RunnerTLSCert: cfg.RunnerTLSCert, RunnerTLSKey: cfg.RunnerTLSKey,
		RunnerTLSCA: cfg.RunnerTLSCA, RunnerTLSServerName: cfg.RunnerTLSServerName, RPCMaxBody: int64(cfg.RPCMaxBody),
		InspectAddr: cfg.InspectAddr, InspectToken: cfg.InspectToken, AdminToken: cfg.AdminToken,
		ProcessName: cfg.ProcessName, RegistryDir: cfg.RegistryDir,
		ScheduleCoordination: string(cfg.ScheduleCoordination), CDCURL: cfg.CDCURL, DisableCDC: cfg.DisableCDC,
	}
}
