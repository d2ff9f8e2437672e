package config

// The environment adapter: the only code of voltro that reads the process
// environment (a lint test holds every other package to it). It turns the
// variables into typed Settings, each variable in one place below; what
// cannot be read is kept per variable for Resolve to report in its order.

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/inspectclient"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/store"
)

// Env reads one variable: the process environment (ProcessEnv), or a map
// in tests and under voltro.WithEnv.
type Env func(string) string

// ProcessEnv is the process environment.
func ProcessEnv() Env { return os.Getenv }

// ProcessEnviron is the process environment as KEY=value lines, for a
// child process that inherits it (voltro bench's workers).
func ProcessEnviron() []string { return os.Environ() }

// The variables checked with a parse of their own.
const (
	envRunnerPort           = "VOLTRO_WORKFLOW_RUNNER_PORT"
	envHeartbeat            = "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT"
	envPollInterval         = "VOLTRO_POLL_INTERVAL"
	envRetention            = "VOLTRO_RETENTION"
	envDeadLetterRetention  = "VOLTRO_DEAD_LETTER_RETENTION"
	envShards               = "VOLTRO_SHARDS"
	envCDC                  = "CDC"
	envRPCMaxBody           = "VOLTRO_RPC_MAX_BODY"
	envSingleHost           = "VOLTRO_SINGLE_HOST"
	envScheduleCoordination = "VOLTRO_SCHEDULE_COORDINATION"
	// EnvRegistryDir names the local registry's directory.
	EnvRegistryDir = "VOLTRO_REGISTRY_DIR"
	// EnvMaxConns caps every PostgreSQL pool the process opens when the
	// caller sets no cap of its own (MaxConns).
	EnvMaxConns = store.MaxConnsEnv
)

// FromEnv resolves the configuration of env (nil: the process's). dbURL
// overrides DB_URL when not empty.
func FromEnv(env Env, dbURL string) (Config, error) {
	s := FromEnvironment(env)
	if dbURL != "" {
		s.DatabaseURL = dbURL
	}
	return s.Resolve()
}

// FromEnvironment reads every setting's variable from env (nil: the
// process environment).
func FromEnvironment(env Env) Settings {
	if env == nil {
		env = os.Getenv
	}
	s := Settings{invalid: map[string]error{}, text: map[string]string{}}
	// text is a variable's trimmed text, recorded when set.
	text := func(name string) string {
		v := strings.TrimSpace(env(name))
		if v != "" {
			s.text[name] = v
		}
		return v
	}
	s.DatabaseURL = env("DB_URL")
	s.Dialect = env("DB_DIALECT")
	s.ReplicaID = env("POD_NAME")
	s.RunnerHost = env("VOLTRO_WORKFLOW_RUNNER_HOST")
	s.PodIP = env("POD_IP")
	if p := text(envRunnerPort); p != "" {
		s.RunnerPort, _ = strconv.Atoi(p) // not a number: 0, which Resolve replaces with a warning
	}
	s.ShardLock = env("VOLTRO_WORKFLOW_SHARD_LOCK")
	s.RunnerStorage = env("VOLTRO_WORKFLOW_RUNNER_STORAGE")
	s.Heartbeat = s.durationVar(envHeartbeat, text(envHeartbeat))
	s.PollInterval = s.durationVar(envPollInterval, text(envPollInterval))
	s.Retention = s.retentionVar(envRetention, text(envRetention))
	s.DeadLetterRetention = s.retentionVar(envDeadLetterRetention, text(envDeadLetterRetention))
	if v := text(envShards); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.invalid[envShards] = errs.New(errs.CodeInvalidConfig, "VOLTRO_SHARDS=%q is not a shard count (1..100000)", v)
		}
		s.Shards = n
	}
	s.ShardGroups = env("VOLTRO_SHARD_GROUPS")
	switch v := text(envCDC); v {
	case "", "1", "true", "on":
	case "0", "false", "off":
		s.DisableCDC = true
	default:
		s.invalid[envCDC] = errs.New(errs.CodeInvalidConfig, "CDC=%q is not valid: use 1 or 0", v)
	}
	s.CDCURL = env("VOLTRO_CDC_URL")
	s.ClusterSecret = env("VOLTRO_CLUSTER_SECRET")
	if v := text(envRPCMaxBody); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			s.invalid[envRPCMaxBody] = errRPCMaxBody(v)
		}
		s.RPCMaxBody = n
	}
	s.RunnerTLSCert = env(rpc.EnvTLSCert)
	s.RunnerTLSKey = env(rpc.EnvTLSKey)
	s.RunnerTLSCA = env(rpc.EnvTLSCA)
	s.RunnerTLSServerName = env(rpc.EnvTLSServerName)
	s.InspectAddr = env("VOLTRO_INSPECT_ADDR")
	s.InspectToken = env("VOLTRO_INSPECT_TOKEN")
	s.InspectTrustedHosts = env(inspectclient.EnvTrustedHosts)
	s.AdminToken = env("VOLTRO_ADMIN_TOKEN")
	s.ProcessName = env("VOLTRO_PROCESS_NAME")
	s.RegistryDir, _ = RegistryDir(env)
	switch v := strings.ToLower(text(envSingleHost)); v {
	case "", "0", "false", "off":
	case "1", "true", "on":
		s.SingleHost = true
	default:
		s.invalid[envSingleHost] = errs.New(errs.CodeInvalidConfig, "VOLTRO_SINGLE_HOST=%q is not valid: use 1 (every instance runs on this machine on purpose) or 0", v)
	}
	s.ScheduleCoordination = env(envScheduleCoordination)
	return s
}

// durationVar reads a Go duration ("10s") or a plain integer of seconds.
// Integers are checked for overflow (an integer times time.Second used to
// wrap: 18446744074 became 290ms); Resolve checks the bounds.
func (s *Settings) durationVar(name, v string) time.Duration {
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err == nil {
		return d
	}
	maximum := durationBounds[name].maximum
	n, nerr := strconv.ParseInt(v, 10, 64)
	switch {
	case nerr != nil && errors.Is(nerr, strconv.ErrRange), nerr == nil && (n > int64(maximum/time.Second) || n < -int64(maximum/time.Second)):
		s.invalid[name] = badDuration(name, v, "is out of range")
	case nerr != nil:
		s.invalid[name] = badDuration(name, v, "is not a duration")
	}
	return time.Duration(n) * time.Second
}

// retentionVar reads a retention variable: "0" keeps everything (a
// negative setting), else what parseRetention reads.
func (s *Settings) retentionVar(name, v string) time.Duration {
	if v == "" {
		return 0
	}
	d, err := parseRetention(v)
	if err != nil {
		s.invalid[name] = badRetention(name, v, err)
		return 0
	}
	if d == 0 {
		return -1
	}
	return d
}

// RegistryDir is the local registry's directory: VOLTRO_REGISTRY_DIR,
// else $XDG_RUNTIME_DIR/voltro, else ~/.voltro/run.
func RegistryDir(env Env) (string, error) {
	if d := strings.TrimSpace(env(EnvRegistryDir)); d != "" {
		return d, nil
	}
	if d := strings.TrimSpace(env("XDG_RUNTIME_DIR")); d != "" {
		return filepath.Join(d, "voltro"), nil
	}
	home := strings.TrimSpace(env("HOME"))
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", errs.Wrap(errs.CodeInvalidConfig, err, "registry: no home directory; set "+EnvRegistryDir)
		}
	}
	return filepath.Join(home, ".voltro", "run"), nil
}

// The demo's tick period (voltro demo).
const (
	// EnvDemoTick sets the demo tick period when --tick is not given.
	EnvDemoTick = "VOLTRO_DEMO_TICK"
	// DefaultDemoTick is the period when neither is given.
	DefaultDemoTick = 5 * time.Second
)

// DemoTick resolves the demo tick period: the --tick flag value if not
// empty, else VOLTRO_DEMO_TICK, else 5s. A value that is not a whole number
// of seconds of at least 1s fails with CodeInvalidConfig.
func DemoTick(flagValue string, env Env) (time.Duration, error) {
	src, raw := "--tick", strings.TrimSpace(flagValue)
	if raw == "" {
		src, raw = EnvDemoTick, strings.TrimSpace(env(EnvDemoTick))
	}
	if raw == "" {
		return DefaultDemoTick, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return 0, errs.New(errs.CodeInvalidConfig, "%s=%q: want a whole number of seconds, at least 1s (e.g. 5s, 1m)", src, raw)
	}
	return d, nil
}

// FeedSettings are what a change feed opened outside an App reads (a
// watcher, package changes' ConfigFromEnv).
type FeedSettings struct {
	URL, Dialect, ReplicaID, ReplicationURL string
	DisableCDC                              bool
}

// Feed reads DB_URL, DB_DIALECT, POD_NAME, CDC (1 or 0, also yes or no)
// and VOLTRO_CDC_URL.
func Feed(env Env) (FeedSettings, error) {
	f := FeedSettings{URL: env("DB_URL"), Dialect: env("DB_DIALECT"), ReplicaID: env("POD_NAME"), ReplicationURL: env("VOLTRO_CDC_URL")}
	switch strings.ToLower(strings.TrimSpace(env(envCDC))) {
	case "", "1", "true", "on", "yes":
	case "0", "false", "off", "no":
		f.DisableCDC = true
	default:
		return f, errs.New(errs.CodeInvalidConfig, "CDC=%q: want 1 or 0", env(envCDC))
	}
	return f, nil
}

// What the CLI and the benchmarks read beside an instance's settings.

// DatabaseURL is DB_URL: the database a command acts on unless it is told
// another.
func DatabaseURL(env Env) string { return env("DB_URL") }

// Dialect is DB_DIALECT.
func Dialect(env Env) string { return env("DB_DIALECT") }

// NoColor reports whether NO_COLOR asks for output without colour.
func NoColor(env Env) bool { return env("NO_COLOR") != "" }

// EnvBenchBlock makes a worker of voltro bench workflows --failover block
// in its workflow's second step (=1).
const EnvBenchBlock = "VOLTRO_BENCH_BLOCK"

// BenchBlock reports whether VOLTRO_BENCH_BLOCK=1.
func BenchBlock(env Env) bool { return env(EnvBenchBlock) == "1" }

// Forward is what env sets of the named variables, as KEY=value lines for
// a child process's environment.
func Forward(env Env, names ...string) []string {
	var out []string
	for _, k := range names {
		if v := env(k); v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// The test suite's own variables, set by scripts/test or by hand.
const (
	EnvTestPostgresURL = "VOLTRO_TEST_POSTGRES_URL"
	EnvTestMariaDBDSN  = "VOLTRO_TEST_MARIADB_DSN"
	EnvTestGaleraURLs  = "VOLTRO_TEST_GALERA_URLS"
	EnvTestDBTag       = "VOLTRO_TEST_DB_TAG"
)

// TestSetting is one of the test suite's variables (EnvTest…) from the
// process environment.
func TestSetting(name string) string {
	switch name {
	case EnvTestPostgresURL, EnvTestMariaDBDSN, EnvTestGaleraURLs, EnvTestDBTag:
		return os.Getenv(name)
	}
	return ""
}

// RegistryDirSetting is VOLTRO_REGISTRY_DIR as the process environment
// sets it ("" when it does not), for a test that hands it to the
// instances it starts.
func RegistryDirSetting() string { return os.Getenv(EnvRegistryDir) }

// executableName is the process's executable's base name.
func executableName() string {
	exe, err := os.Executable()
	if err != nil || exe == "" {
		exe = os.Args[0]
	}
	return strings.TrimSuffix(filepath.Base(exe), ".exe")
}

// MaxConns is DB_MAX_CONNS from the process environment, or def when it
// is not set: the cap of every PostgreSQL pool the process opens where the
// caller sets none. scripts/test sets it so that every test process, and
// every process a test starts, stays inside one connection budget.
func MaxConns(def int) (int, error) {
	v := os.Getenv(EnvMaxConns)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errs.New(errs.CodeInvalidConfig, "%s=%q: want a whole number of connections, 1 or more", EnvMaxConns, v)
	}
	return n, nil
}
