package config

// Settings: the configuration as given, typed, before defaults. The
// environment adapter (env.go) fills one from the variables; the root
// package's voltro.Config lays an application's own values over it field
// by field (Override); Resolve applies the defaults, checks every value
// and derives the rest into a Config.

import (
	"reflect"
	"strconv"
	"time"
)

// Settings hold one field per setting, each named in its tag by the
// environment variable that sets it; the zero value leaves the setting
// to its default.
type Settings struct {
	DatabaseURL string `env:"DB_URL"`
	Dialect     string `env:"DB_DIALECT"`
	ReplicaID   string `env:"POD_NAME"` // else the host name and process id

	RunnerHost    string        `env:"VOLTRO_WORKFLOW_RUNNER_HOST"` // else PodIP, else localhost
	PodIP         string        `env:"POD_IP"`
	RunnerPort    int           `env:"VOLTRO_WORKFLOW_RUNNER_PORT"` // out of 1..65535: the default, with a warning
	SingleHost    bool          `env:"VOLTRO_SINGLE_HOST"`
	ShardLock     string        `env:"VOLTRO_WORKFLOW_SHARD_LOCK"`     // auto, row or advisory
	RunnerStorage string        `env:"VOLTRO_WORKFLOW_RUNNER_STORAGE"` // sql or memory
	Heartbeat     time.Duration `env:"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT"`
	PollInterval  time.Duration `env:"VOLTRO_POLL_INTERVAL"`
	Shards        int           `env:"VOLTRO_SHARDS"`
	ShardGroups   string        `env:"VOLTRO_SHARD_GROUPS"` // comma-separated

	// Retention and DeadLetterRetention: negative keeps for ever (the
	// variables' 0).
	Retention           time.Duration `env:"VOLTRO_RETENTION"`
	DeadLetterRetention time.Duration `env:"VOLTRO_DEAD_LETTER_RETENTION"`

	ClusterSecret       string `env:"VOLTRO_CLUSTER_SECRET"`
	RPCMaxBody          int64  `env:"VOLTRO_RPC_MAX_BODY"`
	RunnerTLSCert       string `env:"VOLTRO_RUNNER_TLS_CERT"`
	RunnerTLSKey        string `env:"VOLTRO_RUNNER_TLS_KEY"`
	RunnerTLSCA         string `env:"VOLTRO_RUNNER_TLS_CA"`
	RunnerTLSServerName string `env:"VOLTRO_RUNNER_TLS_SERVER_NAME"`

	InspectAddr         string `env:"VOLTRO_INSPECT_ADDR"`
	InspectToken        string `env:"VOLTRO_INSPECT_TOKEN"`
	InspectTrustedHosts string `env:"VOLTRO_INSPECT_TRUSTED_HOSTS"`
	AdminToken          string `env:"VOLTRO_ADMIN_TOKEN"`
	ProcessName         string `env:"VOLTRO_PROCESS_NAME"` // else the executable's base name
	// RegistryDir is VOLTRO_REGISTRY_DIR, else under XDG_RUNTIME_DIR or
	// HOME (env.go); "" when none can be had.
	RegistryDir string `env:"VOLTRO_REGISTRY_DIR"`

	ScheduleCoordination string `env:"VOLTRO_SCHEDULE_COORDINATION"` // single, advisoryLock or cluster
	CDCURL               string `env:"VOLTRO_CDC_URL"`
	DisableCDC           bool   `env:"CDC"` // CDC=0

	// invalid are the variables whose text could not be read, with the
	// error each gives; Resolve returns the first, in its order, unless a
	// value laid over it (Override) replaced it.
	invalid map[string]error
	// text is each variable's text as set, for messages that quote it.
	text map[string]string
}

// Override lays o's non-zero fields over s: each replaces s's value, and
// whatever was wrong with the text s had read for it.
func (s *Settings) Override(o Settings) {
	sv, ov := reflect.ValueOf(s).Elem(), reflect.ValueOf(o)
	for i := range ov.NumField() {
		f := ov.Type().Field(i)
		if !f.IsExported() || ov.Field(i).IsZero() {
			continue
		}
		sv.Field(i).Set(ov.Field(i))
		name := f.Tag.Get("env")
		delete(s.invalid, name)
		delete(s.text, name)
	}
}

// Vars lists the environment variable of every setting, in field order.
func Vars() []string {
	t := reflect.TypeFor[Settings]()
	var out []string
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("env"); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// Validate reports the first setting that is wrong, as Resolve would.
func (s Settings) Validate() error {
	_, err := s.Resolve()
	return err
}

// failed is the error the environment's text for name gave, if any.
func (s Settings) failed(name string) error { return s.invalid[name] }

// shown is how a message quotes a setting: its text as set in the
// environment, else value.
func (s Settings) shown(name, value string) string {
	if t, ok := s.text[name]; ok {
		return t
	}
	return value
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
