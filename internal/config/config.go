package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/inspectclient"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/store"
)

// DefaultRunnerPort is the runner port when none (or an invalid one) is set.
const DefaultRunnerPort = 34000

// RunnerStorage is where runner membership and shard ownership live.
type RunnerStorage string

const (
	RunnerStorageSQL    RunnerStorage = "sql"
	RunnerStorageMemory RunnerStorage = "memory"
)

// Config is the resolved deployment contract.
type Config struct {
	DB            dburl.Resolved
	ReplicaID     string
	RunnerHost    string
	RunnerPort    int
	LocalhostRisk bool // a SQL-backed runner advertising a loopback host, not declared single-host
	// SingleHost: VOLTRO_SINGLE_HOST=1 declares that every instance runs on
	// this one machine on purpose (dev, one VM): a loopback runner address
	// is then intended and not flagged.
	SingleHost    bool
	ShardLock     store.LockMode
	RunnerStorage RunnerStorage
	StorageReason string
	Heartbeat     time.Duration
	PollInterval  time.Duration
	ShardCount    int
	Groups        []string
	CDC           bool
	// ClusterSecret is VOLTRO_CLUSTER_SECRET as set: "" means use the
	// secret stored in the database; several comma-separated secrets are a
	// rotation (the first signs, all verify).
	ClusterSecret string
	RPCMaxBody    int64 // VOLTRO_RPC_MAX_BODY: the largest runner-RPC body accepted
	// RunnerTLS is the runner port's TLS (VOLTRO_RUNNER_TLS_*), loaded and
	// checked; nil: the runner port speaks plain HTTP.
	RunnerTLS    *rpc.TLS
	InspectAddr  string
	InspectToken string
	ProcessName  string // VOLTRO_PROCESS_NAME, else the executable's base name
	RegistryDir  string // local runtime registry; "" when none can be had
	AdminToken   string
	// ScheduleCoordination is the app-wide schedule coordination
	// (single, advisoryLock or cluster); "" decides by the store.
	ScheduleCoordination string
	// CDCURL is the change feed's replication connection (VOLTRO_CDC_URL);
	// "" uses the database URL.
	CDCURL string
	// Warnings are problems that did not stop boot; the engine logs them.
	Warnings []string

	// InspectTrust is where the CLI may send InspectToken: loopback,
	// widened by VOLTRO_INSPECT_TRUSTED_HOSTS.
	InspectTrust inspectclient.Trust

	// Retention (VOLTRO_RETENTION) is how long finished runs, with every
	// row that belongs to them, and processed messages with their replies
	// are kept; DeadLetterRetention (VOLTRO_DEAD_LETTER_RETENTION) how long
	// dead letters are. 0 keeps everything. See docs/retention.md.
	Retention           time.Duration
	DeadLetterRetention time.Duration
}

// RunnerAddress is host:port as advertised to other runners.
func (c Config) RunnerAddress() string {
	return net.JoinHostPort(c.RunnerHost, strconv.Itoa(c.RunnerPort))
}

// Clustered reports whether runner state lives in the shared SQL store.
func (c Config) Clustered() bool { return c.RunnerStorage == RunnerStorageSQL }

// Resolve applies the defaults, checks every setting and derives the
// configuration. Each step checks its own settings, in this order; the
// first invalid one is the error returned, naming its variable.
func (s Settings) Resolve() (Config, error) {
	var c Config
	var err error
	if c.DB, err = dburl.Resolve(s.DatabaseURL, s.Dialect); err != nil {
		return c, err
	}
	portWarning := c.runnerAddress(s)
	if err = c.shardLock(s); err != nil {
		return c, err
	}
	if err = c.runnerStorage(s); err != nil {
		return c, err
	}

	// Only SQL runner storage listens on the runner port; SQLite and memory
	// (single-process) never use it, so a bad value there is no concern.
	if portWarning != "" && c.Clustered() {
		c.Warnings = append(c.Warnings, portWarning)
	}

	if c.Heartbeat, err = duration(s, envHeartbeat, s.Heartbeat); err != nil {
		return c, err
	}
	if c.PollInterval, err = duration(s, envPollInterval, s.PollInterval); err != nil {
		return c, err
	}
	for _, step := range []func(Settings) error{
		c.retention, c.shards, c.cdc, c.clusterSecret, c.rpcMaxBody, c.tls, c.inspect, c.singleHost, c.schedules,
	} {
		if err = step(s); err != nil {
			return c, err
		}
	}
	if c.Clustered() && IsLoopbackHost(c.RunnerHost) && !c.SingleHost {
		c.LocalhostRisk = true
		c.Warnings = append(c.Warnings, fmt.Sprintf("workflow runner advertises %s: %s; %s", c.RunnerAddress(), LocalhostEffect, LocalhostFix))
	}
	return c, nil
}

// isSet reports whether a setting was given: a non-zero value, or any
// text in the environment (a 0 there is a value, not an absence).
func (s Settings) isSet(name string, nonZero bool) bool {
	_, ok := s.text[name]
	return nonZero || ok
}

// runnerAddress sets the replica id and the runner's advertised host and
// port. A bad port falls back to the default; the warning it returns is
// said only where a runner port is listened on (see Resolve).
func (c *Config) runnerAddress(s Settings) (portWarning string) {
	c.ReplicaID = strings.TrimSpace(s.ReplicaID)
	if c.ReplicaID == "" {
		h, _ := os.Hostname()
		c.ReplicaID = fmt.Sprintf("%s-%d", h, os.Getpid())
	}

	c.RunnerHost = strings.TrimSpace(s.RunnerHost)
	if c.RunnerHost == "" {
		c.RunnerHost = strings.TrimSpace(s.PodIP)
	}
	if c.RunnerHost == "" {
		c.RunnerHost = "localhost"
	}

	c.RunnerPort = DefaultRunnerPort
	if s.isSet(envRunnerPort, s.RunnerPort != 0) {
		if n := s.RunnerPort; n < 1 || n > 65535 {
			portWarning = fmt.Sprintf("VOLTRO_WORKFLOW_RUNNER_PORT=%q is not a port (1..65535); using %d (a Kubernetes Service named voltro-workflow-runner injects tcp://… into this variable: rename the Service or set the port explicitly)", s.shown(envRunnerPort, strconv.Itoa(n)), DefaultRunnerPort)
		} else {
			c.RunnerPort = n
		}
	}
	return portWarning
}

// shardLock checks VOLTRO_WORKFLOW_SHARD_LOCK.
func (c *Config) shardLock(s Settings) error {
	switch m := store.LockMode(strings.ToLower(strings.TrimSpace(s.ShardLock))); m {
	case "":
		c.ShardLock = store.LockAuto
	case store.LockAuto, store.LockRow, store.LockAdvisory:
		c.ShardLock = m
	default:
		return errs.New(errs.CodeInvalidConfig, "VOLTRO_WORKFLOW_SHARD_LOCK=%q is not valid: use auto, row or advisory", s.ShardLock)
	}
	return nil
}

// runnerStorage checks VOLTRO_WORKFLOW_RUNNER_STORAGE against the dialect.
func (c *Config) runnerStorage(s Settings) error {
	sqlDialect := c.DB.Dialect.Shared()
	switch rs := strings.ToLower(strings.TrimSpace(s.RunnerStorage)); rs {
	case "":
		if sqlDialect {
			c.RunnerStorage, c.StorageReason = RunnerStorageSQL, "shared SQL store"
		} else {
			c.RunnerStorage, c.StorageReason = RunnerStorageMemory, fmt.Sprintf("%s is a single-process store", c.DB.Dialect)
		}
	case "sql":
		if !sqlDialect {
			return errs.New(errs.CodeInvalidConfig, "VOLTRO_WORKFLOW_RUNNER_STORAGE=sql is not supported on a local %s store: it cannot coordinate several processes; use postgres or mariadb for several executing replicas, or drop the variable", c.DB.Dialect)
		}
		c.RunnerStorage, c.StorageReason = RunnerStorageSQL, "VOLTRO_WORKFLOW_RUNNER_STORAGE=sql"
	case "memory":
		c.RunnerStorage, c.StorageReason = RunnerStorageMemory, "VOLTRO_WORKFLOW_RUNNER_STORAGE=memory (no cross-instance handoff)"
	default:
		return errs.New(errs.CodeInvalidConfig, "VOLTRO_WORKFLOW_RUNNER_STORAGE=%q is not valid: use sql or memory", rs)
	}
	return nil
}

// shards checks VOLTRO_SHARDS and VOLTRO_SHARD_GROUPS.
func (c *Config) shards(s Settings) error {
	if err := s.failed(envShards); err != nil {
		return err
	}
	c.ShardCount = 300
	if s.isSet(envShards, s.Shards != 0) {
		if n := s.Shards; n < 1 || n > 100000 {
			return errs.New(errs.CodeInvalidConfig, "VOLTRO_SHARDS=%q is not a shard count (1..100000)", s.shown(envShards, strconv.Itoa(n)))
		}
		c.ShardCount = s.Shards
	}
	c.Groups = []string{"default"}
	if g := strings.TrimSpace(s.ShardGroups); g != "" {
		// An empty group ("," or "a,,b") used to be skipped, so "," stored a
		// cluster config with no groups that every runner then refused.
		c.Groups = nil
		for _, x := range strings.Split(g, ",") {
			x = strings.TrimSpace(x)
			switch {
			case x == "":
				return errs.New(errs.CodeInvalidConfig, "VOLTRO_SHARD_GROUPS=%q names an empty group: list group names separated by commas (e.g. default,payments), or unset it for one group named default", g)
			case strings.ContainsAny(x, "/ \t"):
				return errs.New(errs.CodeInvalidConfig, "VOLTRO_SHARD_GROUPS: group %q may not contain '/' or spaces", x)
			case slices.Contains(c.Groups, x):
				return errs.New(errs.CodeInvalidConfig, "VOLTRO_SHARD_GROUPS=%q names group %q twice", g, x)
			}
			c.Groups = append(c.Groups, x)
		}
	}
	return nil
}

// cdc checks CDC.
func (c *Config) cdc(s Settings) error {
	if err := s.failed(envCDC); err != nil {
		return err
	}
	c.CDC = !s.DisableCDC
	c.CDCURL = strings.TrimSpace(s.CDCURL)
	return nil
}

// clusterSecret checks VOLTRO_CLUSTER_SECRET: one secret, or during a
// rotation two (or more) comma-separated, the first signing and all
// accepted. Unset, the engine uses the random secret stored in the database.
func (c *Config) clusterSecret(s Settings) error {
	c.ClusterSecret = strings.TrimSpace(s.ClusterSecret)
	if c.ClusterSecret == "" {
		return nil
	}
	n := 0
	for _, sec := range strings.Split(c.ClusterSecret, ",") {
		switch sec = strings.TrimSpace(sec); {
		case sec == "":
		case len(sec) < MinSecretLen:
			c.Warnings = append(c.Warnings, fmt.Sprintf("VOLTRO_CLUSTER_SECRET holds a secret of %d characters: anyone who guesses it can call this runner; use at least %d random characters (or unset it: the cluster then keeps a random one in the database)", len(sec), MinSecretLen))
			n++
		default:
			n++
		}
	}
	if n == 0 {
		return errs.New(errs.CodeInvalidConfig, "VOLTRO_CLUSTER_SECRET=%q holds no secret: set one (or two, comma-separated, while rotating) or unset it", c.ClusterSecret)
	}
	return nil
}

// rpcMaxBody checks VOLTRO_RPC_MAX_BODY.
func (c *Config) rpcMaxBody(s Settings) error {
	if err := s.failed(envRPCMaxBody); err != nil {
		return err
	}
	c.RPCMaxBody = DefaultRPCMaxBody
	if s.isSet(envRPCMaxBody, s.RPCMaxBody != 0) {
		if n := s.RPCMaxBody; n < MinRPCMaxBody || n > MaxRPCMaxBody {
			return errRPCMaxBody(s.shown(envRPCMaxBody, itoa(n)))
		}
		c.RPCMaxBody = s.RPCMaxBody
	}
	return nil
}

func errRPCMaxBody(v string) error {
	return errs.New(errs.CodeInvalidConfig, "VOLTRO_RPC_MAX_BODY=%q is not valid: a number of bytes from %d to %d (default %d)", v, MinRPCMaxBody, MaxRPCMaxBody, DefaultRPCMaxBody)
}

// tls loads the runner TLS files (see runnerTLS) and warns when they are
// set where no runner port is listened on.
func (c *Config) tls(s Settings) error {
	var tlsWarning string
	var err error
	if c.RunnerTLS, tlsWarning, err = runnerTLS(s, *c); err != nil {
		return err
	}
	if tlsWarning != "" {
		c.Warnings = append(c.Warnings, tlsWarning)
	}
	if c.RunnerTLS != nil && !c.Clustered() {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s is set, but this instance listens on no runner port (%s): the setting is not used", rpc.EnvTLSCert, c.StorageReason))
	}
	return nil
}

// inspect sets the inspect server's address and tokens, the hosts trusted
// with the token, and the local registry.
func (c *Config) inspect(s Settings) error {
	c.InspectAddr = strings.TrimSpace(s.InspectAddr)
	if c.InspectAddr == "" {
		c.InspectAddr = "127.0.0.1:0"
	}
	c.InspectToken = s.InspectToken
	if host, _, err := net.SplitHostPort(c.InspectAddr); err == nil && c.InspectToken == "" && !IsLoopbackHost(host) {
		c.Warnings = append(c.Warnings, fmt.Sprintf("VOLTRO_INSPECT_ADDR=%s listens beyond loopback without VOLTRO_INSPECT_TOKEN: anyone who reaches it reads the inspect documents, the logs and the dashboard (run inputs included); set VOLTRO_INSPECT_TOKEN", c.InspectAddr))
	}
	// The CLI sends the token only to trusted hosts: the addresses it asks
	// come from runner rows and registry files that any database user or
	// local writer can fill in.
	if v := s.InspectTrustedHosts; strings.TrimSpace(v) != "" {
		var err error
		if c.InspectTrust, err = inspectclient.ParseTrust(v); err != nil {
			return errs.New(errs.CodeInvalidConfig, "%s=%q is not valid: %v", inspectclient.EnvTrustedHosts, v, err)
		}
	}
	c.ProcessName = strings.TrimSpace(s.ProcessName)
	if c.ProcessName == "" {
		c.ProcessName = executableName()
	}
	c.RegistryDir = strings.TrimSpace(s.RegistryDir)
	c.AdminToken = s.AdminToken
	return nil
}

// singleHost checks VOLTRO_SINGLE_HOST.
func (c *Config) singleHost(s Settings) error {
	if err := s.failed(envSingleHost); err != nil {
		return err
	}
	c.SingleHost = s.SingleHost
	return nil
}

// scheduleCoordinations are the values of VOLTRO_SCHEDULE_COORDINATION.
var scheduleCoordinations = []string{"single", "advisoryLock", "cluster"}

// schedules checks VOLTRO_SCHEDULE_COORDINATION, case-insensitively.
func (c *Config) schedules(s Settings) error {
	v := strings.TrimSpace(s.ScheduleCoordination)
	if v == "" {
		return nil
	}
	for _, a := range scheduleCoordinations {
		if strings.EqualFold(v, a) {
			c.ScheduleCoordination = a
			return nil
		}
	}
	return errs.New(errs.CodeInvalidConfig, "unknown %s %q (want one of %s)", envScheduleCoordination, v, strings.Join(scheduleCoordinations, ", "))
}

// runnerTLS reads VOLTRO_RUNNER_TLS_CERT, _KEY, _CA and _SERVER_NAME: none
// (plain HTTP), CERT and KEY (TLS), or all three (mutual TLS), with an
// optional server name. The files are loaded at boot, and this runner's
// certificate is verified as its peers will verify it: under mutual TLS a
// failure stops the boot (every peer would refuse every call); without a CA
// peers use their own system roots, so it is only a warning.
func runnerTLS(s Settings, c Config) (*rpc.TLS, string, error) {
	f := rpc.TLSFiles{
		Cert: strings.TrimSpace(s.RunnerTLSCert), Key: strings.TrimSpace(s.RunnerTLSKey),
		CA: strings.TrimSpace(s.RunnerTLSCA), ServerName: strings.TrimSpace(s.RunnerTLSServerName),
	}
	switch {
	case f.Cert == "" && f.Key == "":
		for _, v := range []struct{ name, val string }{{rpc.EnvTLSCA, f.CA}, {rpc.EnvTLSServerName, f.ServerName}} {
			if v.val != "" {
				return nil, "", errs.New(errs.CodeInvalidConfig, "%s=%q is set without %s and %s: TLS on the runner port needs this runner's own certificate and key (PEM files); set both, or unset %s", v.name, v.val, rpc.EnvTLSCert, rpc.EnvTLSKey, v.name)
			}
		}
		return nil, "", nil
	case f.Cert == "":
		return nil, "", errs.New(errs.CodeInvalidConfig, "%s is set but %s is not: set both (the PEM certificate and its private key) or neither", rpc.EnvTLSKey, rpc.EnvTLSCert)
	case f.Key == "":
		return nil, "", errs.New(errs.CodeInvalidConfig, "%s is set but %s is not: set both (the PEM certificate and its private key) or neither", rpc.EnvTLSCert, rpc.EnvTLSKey)
	}
	if sn := f.ServerName; sn != "" && (strings.ContainsAny(sn, " \t/") || strings.Contains(sn, ":") && net.ParseIP(sn) == nil) {
		return nil, "", errs.New(errs.CodeInvalidConfig, "%s=%q is not a host name or an IP address (no port, no scheme)", rpc.EnvTLSServerName, sn)
	}
	t, err := rpc.LoadTLS(f)
	if err != nil {
		return nil, "", err
	}
	if !c.Clustered() {
		return t, "", nil
	}
	if err := t.Check(c.RunnerHost); err != nil {
		if t.Mutual() {
			return nil, "", err
		}
		msg := err.Error()
		if e := (*errs.Error)(nil); errors.As(err, &e) && e.Err != nil {
			msg = e.Message + ": " + e.Err.Error()
		}
		return t, msg + " (a warning: without " + rpc.EnvTLSCA + " peers verify against their own system roots)", nil
	}
	return t, "", nil
}

// What a loopback runner address costs and how to fix it: every surface
// that flags one (boot warning, inspect, cluster status) says it in these
// words.
const (
	LocalhostEffect = "instances on other machines cannot reach it, so wake-ups and reply pushes to it fall back to polling (work is picked up up to a poll interval later; nothing is lost, runs still resume on any instance) and volatile messages for its shards fail"
	LocalhostFix    = "set POD_IP (Kubernetes downward API status.podIP) or VOLTRO_WORKFLOW_RUNNER_HOST to an address the other instances can reach, or VOLTRO_SINGLE_HOST=1 if every instance runs on this machine on purpose"
)

// Limits of the runner-RPC settings.
const (
	MinSecretLen      = 16
	DefaultRPCMaxBody = 1 << 20
	MinRPCMaxBody     = 4 << 10
	MaxRPCMaxBody     = 256 << 20
)

// Upper bounds of the duration settings: a heartbeat beyond MaxHeartbeat
// would leave a dead runner's shards unowned for hours; polling more rarely
// than MaxPollInterval is no longer a fallback.
const (
	MaxHeartbeat    = time.Hour
	MaxPollInterval = time.Hour
)

// durationBounds are each duration setting's default and bounds.
var durationBounds = map[string]struct{ def, minimum, maximum time.Duration }{
	envHeartbeat:    {10 * time.Second, 100 * time.Millisecond, MaxHeartbeat},
	envPollInterval: {0, 10 * time.Millisecond, MaxPollInterval},
}

// duration checks one duration setting: unset is its default; set, it
// must lie in its bounds.
func duration(s Settings, name string, d time.Duration) (time.Duration, error) {
	if err := s.failed(name); err != nil {
		return 0, err
	}
	b := durationBounds[name]
	if !s.isSet(name, d != 0) {
		return b.def, nil
	}
	switch {
	case d < b.minimum:
		return 0, badDuration(name, s.shown(name, d.String()), "is below the minimum")
	case d > b.maximum:
		return 0, badDuration(name, s.shown(name, d.String()), "is above the maximum")
	}
	return d, nil
}

func badDuration(name, text, why string) error {
	b := durationBounds[name]
	return errs.New(errs.CodeInvalidConfig, "%s=%q %s: it must be a duration of at least %v and at most %v (e.g. 10s, or 10 for seconds)", name, text, why, b.minimum, b.maximum)
}

// IsLoopbackHost reports whether host names this machine only.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
