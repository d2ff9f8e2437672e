package voltro

// Config: the configuration as a Go struct, for apps that set it in code.
// Each field stands for one environment variable; WithConfig lays the set
// fields over the environment, so the same validation, defaults and
// messages apply, and a deployment that sets the variables keeps working
// for every field the code leaves zero.

import (
	"strconv"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/schedule"
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
		o.Overlay = func(env config.Env) config.Env { return cfg.over(env) }
	}
}

// vars is cfg as environment variables: only its non-zero fields, each in
// a form the variable's parser reads.
func (cfg Config) vars() map[string]string {
	m := map[string]string{}
	str := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	num := func(k string, n int) {
		if n != 0 {
			m[k] = strconv.Itoa(n)
		}
	}
	dur := func(k string, d time.Duration) {
		if d != 0 {
			m[k] = d.String()
		}
	}
	keep := func(k string, d time.Duration) {
		switch {
		case d < 0:
			m[k] = "0" // keep for ever
		case d > 0:
			m[k] = strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10) // plain integers are seconds
		}
	}
	str("DB_URL", cfg.DatabaseURL)
	str("DB_DIALECT", cfg.Dialect)
	str("POD_NAME", cfg.ReplicaID)
	str("VOLTRO_WORKFLOW_RUNNER_HOST", cfg.RunnerHost)
	num("VOLTRO_WORKFLOW_RUNNER_PORT", cfg.RunnerPort)
	if cfg.SingleHost {
		m["VOLTRO_SINGLE_HOST"] = "1"
	}
	str("VOLTRO_WORKFLOW_SHARD_LOCK", cfg.ShardLock)
	str("VOLTRO_WORKFLOW_RUNNER_STORAGE", cfg.RunnerStorage)
	dur("VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT", cfg.Heartbeat)
	dur("VOLTRO_POLL_INTERVAL", cfg.PollInterval)
	num("VOLTRO_SHARDS", cfg.Shards)
	str("VOLTRO_SHARD_GROUPS", strings.Join(cfg.ShardGroups, ","))
	keep("VOLTRO_RETENTION", cfg.Retention)
	keep("VOLTRO_DEAD_LETTER_RETENTION", cfg.DeadLetterRetention)
	str("VOLTRO_CLUSTER_SECRET", cfg.ClusterSecret)
	str(rpc.EnvTLSCert, cfg.RunnerTLSCert)
	str(rpc.EnvTLSKey, cfg.RunnerTLSKey)
	str(rpc.EnvTLSCA, cfg.RunnerTLSCA)
	str(rpc.EnvTLSServerName, cfg.RunnerTLSServerName)
	num("VOLTRO_RPC_MAX_BODY", cfg.RPCMaxBody)
	str("VOLTRO_INSPECT_ADDR", cfg.InspectAddr)
	str("VOLTRO_INSPECT_TOKEN", cfg.InspectToken)
	str("VOLTRO_ADMIN_TOKEN", cfg.AdminToken)
	str("VOLTRO_PROCESS_NAME", cfg.ProcessName)
	str("VOLTRO_REGISTRY_DIR", cfg.RegistryDir)
	str(schedule.EnvCoordination, string(cfg.ScheduleCoordination))
	str("VOLTRO_CDC_URL", cfg.CDCURL)
	if cfg.DisableCDC {
		m["CDC"] = "0"
	}
	return m
}

// over returns env with cfg's set fields laid over it.
func (cfg Config) over(env func(string) string) func(string) string {
	m := cfg.vars()
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return env(k)
	}
}
