// Galera test clusters: three real mariadbd processes with the galera-4
// provider on loopback ports, started from a cached mariadb-install-db
// datadir, with helpers to kill and restart nodes for failover tests. The
// same code backs `go run ./internal/testdb/cmd/galera up|down`, which
// scripts/test uses to share one cluster among all test packages.

package testdb

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// GaleraURLsEnv names the variable through which scripts/test hands its
// running cluster to every test package: comma-separated mariadb:// URLs,
// one per node, without a database.
const GaleraURLsEnv = "VOLTRO_TEST_GALERA_URLS"

// GaleraProvider is the galera-4 library that Debian's galera-4 package installs.
const GaleraProvider = "/usr/lib/galera/libgalera_smm.so"

// Port layout of one cluster, relative to its base port B: node i (0-2) has
// SQL port B+i, gcomm B+10+i, IST B+20+i and rsync SST B+30+i. Node i's
// Galera ports (gcomm, IST, SST) listen on 127.0.0.(i+1), so a test can cut
// the network between nodes with iptables by address; SQL is on 127.0.0.1.
const (
	galeraNodes       = 3
	galeraDefaultBase = 3311
	galeraBandStep    = 100
	galeraBands       = 60
)

// GaleraOptions tunes StartGalera. The zero value is fine for tests.
type GaleraOptions struct {
	// Dir is where cluster directories live; default $TMPDIR/voltro-galera-<uid>.
	Dir string
	// BasePort is the first SQL port tried (default 3311). When its band is
	// taken, the next free band (+100, +200, ...) is used.
	BasePort int
	// Detach leaves the processes running after this process exits (for the
	// galera command). Otherwise the kernel kills them when it exits.
	Detach bool
	// Database, when set, is created on the cluster and named in the URLs.
	Database string
	// Logger receives progress lines; nil discards them.
	Logger *slog.Logger
	// OwnerPID, for a detached cluster, is the process it serves (the
	// scripts/test shell). Once that process is gone without stopping the
	// cluster, the next StartGalera that wants its ports stops it.
	OwnerPID int
}

// GaleraCluster is a running three-node cluster. Node indexes are 0, 1, 2;
// node 0 bootstrapped the cluster.
type GaleraCluster struct {
	dir      string
	base     int
	database string
	detach   bool
	owner    int
	lock     *os.File
	log      *slog.Logger
	cred     *syscall.Credential

	mu    sync.Mutex // serialises Restart and Stop
	nodes [galeraNodes]*galeraNode
}

type galeraNode struct {
	idx     int
	dir     string
	datadir string
	cnf     string
	errlog  string
	addr    string // Galera listen address, 127.0.0.(idx+1)
	sqlPort int
	gcomm   int
	ist     int
	sst     int
	proc    atomic.Pointer[galeraProc] // the latest process, nil before the first start
}

// galeraProc is one run of a node's mariadbd.
type galeraProc struct {
	pid  int
	done chan struct{} // closed once the process has exited
}

// galeraState is what StopGaleraDir needs to find the processes again.
type galeraState struct {
	Base  int      `json:"base"`
	Owner int      `json:"owner,omitempty"`
	PIDs  []int    `json:"pids"`
	URLs  []string `json:"urls"`
}

// StartGalera starts a fresh cluster and returns once all three nodes are
// Synced and every node sees a cluster of three.
func StartGalera(ctx context.Context, opt GaleraOptions) (*GaleraCluster, error) {
	started := time.Now()
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, err := os.Stat(GaleraProvider); err != nil {
		return nil, fmt.Errorf("galera: provider library missing (install galera-4, or run scripts/services.sh): %w", err)
	}
	if _, err := exec.LookPath("mariadbd"); err != nil {
		if _, err2 := os.Stat("/usr/sbin/mariadbd"); err2 != nil {
			return nil, fmt.Errorf("galera: mariadbd not found (install mariadb-server): %w", err)
		}
	}
	root := opt.Dir
	if root == "" {
		root = filepath.Join(os.TempDir(), fmt.Sprintf("voltro-galera-%d", os.Geteuid()))
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("galera: %w", err)
	}
	cred, err := galeraCredential()
	if err != nil {
		return nil, err
	}
	tmpl, err := galeraTemplate(ctx)
	if err != nil {
		return nil, err
	}
	base := opt.BasePort
	if base == 0 {
		base = galeraDefaultBase
	}
	c := &GaleraCluster{database: opt.Database, detach: opt.Detach, owner: opt.OwnerPID, log: log, cred: cred}
	if err := c.claimPorts(root, base); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	for i := range galeraNodes {
		n, err := c.prepareNode(i, tmpl)
		if err != nil {
			return nil, err
		}
		c.nodes[i] = n
	}
	if cred != nil {
		if err := chownTree(c.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	log.Info("galera: starting cluster", "dir", c.dir, "sql_ports", fmt.Sprintf("%d-%d", c.base, c.base+galeraNodes-1))
	for i := range galeraNodes {
		t0 := time.Now()
		var extra []string
		if i == 0 {
			extra = append(extra, "--wsrep-new-cluster")
		}
		if err := c.startNode(c.nodes[i], extra...); err != nil {
			return nil, err
		}
		if err := c.waitNode(ctx, i, i+1); err != nil {
			return nil, err
		}
		log.Info("galera: node synced", "node", i, "pid", c.nodes[i].pid(), "took", time.Since(t0).Round(time.Millisecond))
	}
	if err := c.WaitSize(ctx, galeraNodes); err != nil {
		return nil, err
	}
	if c.database != "" {
		if err := c.CreateDatabase(ctx, c.database); err != nil {
			return nil, err
		}
	}
	if err := c.writeState(); err != nil {
		return nil, err
	}
	ok = true
	log.Info("galera: cluster up", "urls", strings.Join(c.URLs(), ","), "took", time.Since(started).Round(time.Millisecond))
	return c, nil
}

// Dir is the cluster's directory (datadirs, configs, error logs).
func (c *GaleraCluster) Dir() string { return c.dir }

// Node returns node i's mariadb:// URL (root, empty password).
func (c *GaleraCluster) Node(i int) string {
	return fmt.Sprintf("mariadb://root@127.0.0.1:%d/%s", c.base+i, c.database)
}

// URLs returns the three node URLs.
func (c *GaleraCluster) URLs() []string {
	out := make([]string, galeraNodes)
	for i := range out {
		out[i] = c.Node(i)
	}
	return out
}

// DSN returns node i's go-sql-driver DSN, with timeouts so that a frozen
// node fails a call instead of hanging it.
func (c *GaleraCluster) DSN(i int) string {
	return galeraDSN("root", "", fmt.Sprintf("127.0.0.1:%d", c.base+i), c.database)
}

// PID returns node i's process id, 0 when it is not running.
func (c *GaleraCluster) PID(i int) int {
	if !c.nodes[i].running() {
		return 0
	}
	return c.nodes[i].pid()
}

// Kill sends SIGKILL to node i and waits until the process is gone.
func (c *GaleraCluster) Kill(i int) error {
	n := c.nodes[i]
	if !n.running() {
		return nil
	}
	pid := n.pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("galera: kill node %d (pid %d): %w", i, pid, err)
	}
	if !n.waitExit(30 * time.Second) {
		return fmt.Errorf("galera: node %d (pid %d) did not exit after SIGKILL", i, pid)
	}
	c.log.Info("galera: node killed", "node", i, "pid", pid)
	return nil
}

// Restart starts a stopped or killed node i again: it recovers the node's
// last committed position with --wsrep-recover and passes it as
// --wsrep-start-position, so the node rejoins by IST (3-5 s). Galera falls
// back to a full rsync SST, which is slower but as correct, when the
// recovered position is behind what the node had received, e.g. when it
// was killed right after DDL. It returns once the node is Synced and sees
// every running node.
func (c *GaleraCluster) Restart(ctx context.Context, i int) error {
	// Serialise restarts: each one waits for the cluster it rejoins.
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	if n.running() {
		return fmt.Errorf("galera: restart node %d: still running (pid %d); Kill it first", i, n.pid())
	}
	t0 := time.Now()
	pos, err := c.recoverPosition(ctx, n)
	if err != nil {
		return err
	}
	var extra []string
	if pos != "" {
		extra = append(extra, "--wsrep-start-position="+pos)
	}
	if err := c.startNode(n, extra...); err != nil {
		return err
	}
	if err := c.waitNode(ctx, i, c.running()); err != nil {
		return err
	}
	if err := c.writeState(); err != nil {
		return err
	}
	c.log.Info("galera: node restarted", "node", i, "position", pos, "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// Bootstrap makes node i's component Primary again (pc.bootstrap=YES), for
// a survivor left without quorum after two nodes were lost.
func (c *GaleraCluster) Bootstrap(ctx context.Context, i int) error {
	db, err := sql.Open("mysql", galeraDSN("root", "", fmt.Sprintf("127.0.0.1:%d", c.base+i), ""))
	if err != nil {
		return fmt.Errorf("galera: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'"); err != nil {
		return fmt.Errorf("galera: bootstrap node %d: %w", i, err)
	}
	return nil
}

// WaitSize waits until every running node is Synced and reports
// wsrep_cluster_size = want.
func (c *GaleraCluster) WaitSize(ctx context.Context, want int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		ok := true
		var last string
		for i := range galeraNodes {
			if !c.nodes[i].running() {
				continue
			}
			st, err := c.status(ctx, i)
			if err != nil {
				ok, last = false, err.Error()
				break
			}
			if st["wsrep_local_state_comment"] != "Synced" || st["wsrep_cluster_size"] != strconv.Itoa(want) {
				ok = false
				last = fmt.Sprintf("node %d: state %q, cluster size %s", i, st["wsrep_local_state_comment"], st["wsrep_cluster_size"])
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("galera: waiting for cluster size %d (%s): %w", want, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// CreateDatabase drops and creates database name on the cluster and waits
// until every running node has it.
func (c *GaleraCluster) CreateDatabase(ctx context.Context, name string) error {
	return galeraCreateDatabase(ctx, c.adminDSNs(), name)
}

// Stop kills every node, waits for them to exit and removes the cluster
// directory. It is safe to call more than once.
func (c *GaleraCluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.running() {
			_ = syscall.Kill(n.pid(), syscall.SIGKILL)
		}
	}
	for _, n := range c.nodes {
		n.waitExit(30 * time.Second)
	}
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			c.log.Warn("galera: remove cluster dir", "dir", c.dir, "err", err)
		}
	}
	if c.lock != nil {
		_ = c.lock.Close()
		c.lock = nil
	}
}

// StopGaleraDir stops a cluster that another process started with Detach
// (the galera command's "down"): it kills the recorded PIDs that still run
// mariadbd from that directory and removes the directory.
func StopGaleraDir(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		return fmt.Errorf("galera: read cluster state: %w", err)
	}
	var st galeraState
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("galera: parse cluster state: %w", err)
	}
	var live []int
	for _, pid := range st.PIDs {
		if pidRunsFrom(pid, dir) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				live = append(live, pid)
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range live {
		for pidAlive(pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("galera: pid %d did not exit after SIGKILL", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("galera: remove %s: %w", dir, err)
	}
	return nil
}

// --- the shared cluster of a test binary ---

var shared struct {
	mu      sync.Mutex
	cluster *GaleraCluster // started by this binary, nil when taken from the env
	urls    []string       // node URLs without a database
	err     error
}

// Galera returns three mariadb:// URLs, one per node of a real Galera
// cluster, naming a database created afresh on every call. The database is
// voltro_t_galera_<package dir>_<hash>, so packages sharing one cluster in
// parallel never drop each other's database.
//
// When VOLTRO_TEST_GALERA_URLS is set (scripts/test sets it), that cluster is
// used. Otherwise the first call starts a cluster for this test binary (about
// 7 s); call StopGalera from TestMain after m.Run to remove it cleanly. If
// you don't, the kernel kills the nodes when the binary exits and the next
// start reclaims the directory. Never Kill nodes of this shared cluster: use
// NewGalera for failover tests.
func Galera(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	urls, err := sharedGalera(ctx)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	name := galeraDBName()
	var dsns []string
	out := make([]string, len(urls))
	for i, u := range urls {
		dsn, base, err := galeraURLToDSN(u)
		if err != nil {
			t.Fatalf("testdb: %s: %v", GaleraURLsEnv, err)
		}
		dsns = append(dsns, dsn)
		out[i] = base + name
	}
	if err := galeraCreateDatabase(ctx, dsns, name); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return out
}

// StopGalera stops the cluster that Galera started for this test binary, if
// it started one. Call it from TestMain after m.Run.
func StopGalera() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster != nil {
		shared.cluster.Stop()
		shared.cluster = nil
		shared.urls = nil
	}
}

// NewGalera starts a private cluster for one test (failover tests kill and
// restart its nodes), with database voltro_t_galera created. It is stopped
// by t.Cleanup.
func NewGalera(t testing.TB) *GaleraCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := StartGalera(ctx, GaleraOptions{Database: "voltro_t_galera", BasePort: galeraDefaultBase + galeraBandStep})
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

func sharedGalera(ctx context.Context) ([]string, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.urls != nil {
		return shared.urls, nil
	}
	if env := strings.TrimSpace(os.Getenv(GaleraURLsEnv)); env != "" {
		var urls []string
		for _, u := range strings.Split(env, ",") {
			if u = strings.TrimSpace(u); u != "" {
				urls = append(urls, u)
			}
		}
		if len(urls) == 0 {
			return nil, fmt.Errorf("%s is set but names no URL", GaleraURLsEnv)
		}
		shared.urls = urls
		return urls, nil
	}
	if shared.err != nil {
		return nil, shared.err
	}
	c, err := StartGalera(ctx, GaleraOptions{})
	if err != nil {
		shared.err = err
		return nil, err
	}
	shared.cluster, shared.urls = c, c.URLs()
	return shared.urls, nil
}

// galeraDBName names this package's database: go test runs each test binary
// in its package directory.
func galeraDBName() string {
	wd, err := os.Getwd()
	if err != nil {
		wd = os.Args[0]
	}
	sum := sha256.Sum256([]byte(wd))
	base := regexp.MustCompile(`[^a-z0-9_]`).ReplaceAllString(strings.ToLower(filepath.Base(wd)), "_")
	if len(base) > 30 {
		base = base[:30]
	}
	return "voltro_t_galera_" + base + "_" + hex.EncodeToString(sum[:3])
}

// galeraURLToDSN turns mariadb://user[:pass]@host:port[/db] into an admin DSN
// (no database) and the URL prefix to which a database name is appended.
func galeraURLToDSN(raw string) (dsn, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("parse %q: %w", raw, err)
	}
	if u.Scheme != "mariadb" && u.Scheme != "mysql" {
		return "", "", fmt.Errorf("%q: want a mariadb:// URL", raw)
	}
	pass, _ := u.User.Password()
	prefix = fmt.Sprintf("%s://%s@%s/", u.Scheme, u.User.String(), u.Host)
	return galeraDSN(u.User.Username(), pass, u.Host, ""), prefix, nil
}

func galeraDSN(userName, pass, hostport, db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = userName, pass, "tcp", hostport, db
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 5*time.Second, 30*time.Second, 30*time.Second
	return cfg.FormatDSN()
}

func galeraCreateDatabase(ctx context.Context, dsns []string, name string) error {
	dbs := make([]*sql.DB, len(dsns))
	for i, dsn := range dsns {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return fmt.Errorf("galera: %w", err)
		}
		defer db.Close()
		dbs[i] = db
	}
	// DDL replicates in total order but is applied asynchronously on the
	// other nodes. The name is reused by every call in a package, so first
	// wait until each node has applied the DROP: seeing the name before
	// that could be the previous incarnation, about to vanish.
	visible := func(want bool) error {
		for i, db := range dbs[1:] {
			err := waitFor(ctx, 30*time.Second, func() (bool, error) {
				var n int
				err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n)
				return (n == 1) == want, err
			})
			if err != nil {
				return fmt.Errorf("galera: database %s still %s on node %d: %w", name, map[bool]string{true: "missing", false: "present"}[want], i+1, err)
			}
		}
		return nil
	}
	if _, err := dbs[0].ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
		return fmt.Errorf("galera: drop %s (is the cluster running? scripts/test starts it): %w", name, err)
	}
	if err := visible(false); err != nil {
		return err
	}
	if _, err := dbs[0].ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		return fmt.Errorf("galera: create %s: %w", name, err)
	}
	return visible(true)
}

// --- starting and stopping nodes ---

// claimPorts picks the first band of ports, from base upwards, whose lock
// file is free and whose ports nobody listens on. The lock is an flock held
// by this process and inherited by the mariadbd processes, so it is released
// only when all of them are gone.
func (c *GaleraCluster) claimPorts(root string, base int) error {
	for b := 0; b < galeraBands; b++ {
		p := base + b*galeraBandStep
		f, err := os.OpenFile(filepath.Join(root, fmt.Sprintf("%d.lock", p)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("galera: port lock: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			if !c.reapOrphan(filepath.Join(root, strconv.Itoa(p))) ||
				syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				f.Close()
				continue
			}
		}
		if !galeraPortsFree(p) {
			f.Close()
			continue
		}
		dir := filepath.Join(root, strconv.Itoa(p))
		// A directory left by a process that died holding this lock is stale.
		if err := os.RemoveAll(dir); err != nil {
			f.Close()
			return fmt.Errorf("galera: remove stale %s: %w", dir, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			f.Close()
			return fmt.Errorf("galera: %w", err)
		}
		c.dir, c.base, c.lock = dir, p, f
		return nil
	}
	return fmt.Errorf("galera: no free port band from %d to %d", base, base+galeraBands*galeraBandStep)
}

// reapOrphan stops the detached cluster in dir if the process it served is
// gone, and reports whether it did.
func (c *GaleraCluster) reapOrphan(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		return false
	}
	var st galeraState
	if json.Unmarshal(raw, &st) != nil || st.Owner == 0 || pidAlive(st.Owner) {
		return false
	}
	if err := StopGaleraDir(dir); err != nil {
		c.log.Warn("galera: stop orphaned cluster", "dir", dir, "err", err)
		return false
	}
	c.log.Info("galera: stopped a cluster whose owner is gone", "dir", dir, "owner", st.Owner)
	return true
}

func galeraPortsFree(base int) bool {
	for i := range galeraNodes {
		addrs := []string{
			fmt.Sprintf("127.0.0.1:%d", base+i),
			fmt.Sprintf("127.0.0.%d:%d", i+1, base+10+i),
			fmt.Sprintf("127.0.0.%d:%d", i+1, base+20+i),
			fmt.Sprintf("127.0.0.%d:%d", i+1, base+30+i),
		}
		for _, a := range addrs {
			l, err := net.Listen("tcp", a)
			if err != nil {
				return false
			}
			l.Close()
		}
	}
	return true
}

func (c *GaleraCluster) prepareNode(i int, tmpl string) (*galeraNode, error) {
	n := &galeraNode{
		idx:     i,
		dir:     filepath.Join(c.dir, fmt.Sprintf("n%d", i)),
		addr:    fmt.Sprintf("127.0.0.%d", i+1),
		sqlPort: c.base + i,
		gcomm:   c.base + 10 + i,
		ist:     c.base + 20 + i,
		sst:     c.base + 30 + i,
	}
	n.datadir = filepath.Join(n.dir, "data")
	n.cnf = filepath.Join(n.dir, "my.cnf")
	n.errlog = filepath.Join(n.dir, "error.log")
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return nil, fmt.Errorf("galera: %w", err)
	}
	if out, err := exec.Command("cp", "-a", tmpl, n.datadir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("galera: copy datadir template: %w: %s", err, out)
	}
	var gcomm []string
	for j := range galeraNodes {
		gcomm = append(gcomm, fmt.Sprintf("127.0.0.%d:%d", j+1, c.base+10+j))
	}
	provider := strings.Join([]string{
		fmt.Sprintf("gmcast.listen_addr=tcp://%s:%d", n.addr, n.gcomm),
		fmt.Sprintf("ist.recv_addr=%s:%d", n.addr, n.ist),
		"evs.suspect_timeout=PT3S",
		"evs.inactive_timeout=PT6S",
		"evs.keepalive_period=PT1S",
		"evs.inactive_check_period=PT1S",
		"gcache.size=64M",
	}, ";")
	cnf := fmt.Sprintf(`# Written by voltro's testdb: one node of a throwaway Galera test cluster.
[mysqld]
datadir=%[1]s
socket=%[2]s/mysqld.sock
pid-file=%[2]s/mysqld.pid
log-error=%[3]s
bind-address=127.0.0.1
port=%[4]d
skip-name-resolve
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci
innodb_buffer_pool_size=64M
innodb_log_file_size=16M
innodb_flush_log_at_trx_commit=2
performance_schema=OFF
binlog_format=ROW
innodb_autoinc_lock_mode=2
# One applier thread stalls the node under write conflicts: it waits on a row
# lock of a local transaction that has replicated and waits, in certification
# order, for a write-set only that same applier would certify next. InnoDB's
# BF lock-wait watchdog breaks the cycle after innodb_lock_wait_timeout (50 s);
# clients time out first. With several appliers another one certifies it.
wsrep_slave_threads=4
wsrep_on=ON
wsrep_provider=%[5]s
wsrep_cluster_name=voltro-test-%[6]d
wsrep_cluster_address=gcomm://%[7]s
wsrep_node_name=node%[8]d
wsrep_node_address=%[9]s:%[10]d
wsrep_node_incoming_address=127.0.0.1:%[4]d
wsrep_sst_method=rsync
wsrep_sst_receive_address=%[9]s:%[11]d
wsrep_provider_options="%[12]s"
`, n.datadir, n.dir, n.errlog, n.sqlPort, GaleraProvider, c.base, strings.Join(gcomm, ","),
		i, n.addr, n.gcomm, n.sst, provider)
	if err := os.WriteFile(n.cnf, []byte(cnf), 0o644); err != nil {
		return nil, fmt.Errorf("galera: %w", err)
	}
	return n, nil
}

func (c *GaleraCluster) startNode(n *galeraNode, extra ...string) error {
	logf, err := os.OpenFile(filepath.Join(n.dir, "stdout.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("galera: %w", err)
	}
	defer logf.Close()
	args := append([]string{"--defaults-file=" + n.cnf}, extra...)
	if os.Geteuid() == 0 && c.cred == nil {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(mariadbdPath(), args...)
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{c.lock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if c.detach {
		cmd.SysProcAttr.Setsid = true
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("galera: start node %d: %w", n.idx, err)
		}
	} else {
		// The kernel kills the node when the thread that forked it exits;
		// fork from a thread that lives as long as the process.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		cmd.SysProcAttr.Setpgid = true
		if err := spawn(cmd); err != nil {
			return fmt.Errorf("galera: start node %d: %w", n.idx, err)
		}
	}
	proc := &galeraProc{pid: cmd.Process.Pid, done: make(chan struct{})}
	n.proc.Store(proc)
	go func() {
		_ = cmd.Wait()
		close(proc.done)
	}()
	return nil
}

// waitNode waits until node i is Synced and sees a cluster of size want.
func (c *GaleraCluster) waitNode(ctx context.Context, i, want int) error {
	n := c.nodes[i]
	done := n.proc.Load().done
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last string
	for {
		select {
		case <-done:
			return fmt.Errorf("galera: node %d exited during start-up; last lines of %s:\n%s", i, n.errlog, tail(n.errlog, 25))
		default:
		}
		st, err := c.status(ctx, i)
		if err == nil {
			if st["wsrep_local_state_comment"] == "Synced" && st["wsrep_ready"] == "ON" && st["wsrep_cluster_size"] == strconv.Itoa(want) {
				return nil
			}
			last = fmt.Sprintf("state %q, ready %s, cluster size %s", st["wsrep_local_state_comment"], st["wsrep_ready"], st["wsrep_cluster_size"])
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("galera: node %d not Synced in a cluster of %d (%s); last lines of %s:\n%s: %w",
				i, want, last, n.errlog, tail(n.errlog, 25), ctx.Err())
		case <-done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *GaleraCluster) status(ctx context.Context, i int) (map[string]string, error) {
	db, err := sql.Open("mysql", galeraDSN("root", "", fmt.Sprintf("127.0.0.1:%d", c.base+i), ""))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, err := db.QueryContext(qctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment','wsrep_cluster_size','wsrep_ready','wsrep_cluster_status')")
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", i, err)
	}
	defer rows.Close()
	st := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		st[strings.ToLower(k)] = v
	}
	return st, rows.Err()
}

var recoveredRe = regexp.MustCompile(`Recovered position:\s*([0-9a-f-]{36}:-?\d+)`)

// recoverPosition runs mariadbd --wsrep-recover on a stopped node and returns
// the uuid:seqno it reports ("" when it reports none).
func (c *GaleraCluster) recoverPosition(ctx context.Context, n *galeraNode) (string, error) {
	logPath := filepath.Join(n.dir, "recover.log")
	_ = os.Remove(logPath)
	args := []string{"--defaults-file=" + n.cnf, "--wsrep-recover", "--log-error=" + logPath}
	if os.Geteuid() == 0 && c.cred == nil {
		args = append(args, "--user=root")
	}
	cmd := exec.CommandContext(ctx, mariadbdPath(), args...)
	cmd.Dir = n.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("galera: --wsrep-recover on node %d: %w: %s\n%s", n.idx, err, out, tail(logPath, 25))
	}
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return "", fmt.Errorf("galera: %w", err)
	}
	m := recoveredRe.FindAllStringSubmatch(string(raw), -1)
	if len(m) == 0 {
		return "", nil
	}
	pos := m[len(m)-1][1]
	if strings.HasPrefix(pos, "00000000-0000-0000-0000-000000000000") || strings.HasSuffix(pos, ":-1") {
		return "", nil
	}
	return pos, nil
}

func (c *GaleraCluster) running() int {
	k := 0
	for _, n := range c.nodes {
		if n != nil && n.running() {
			k++
		}
	}
	return k
}

func (c *GaleraCluster) adminDSNs() []string {
	var out []string
	for i, n := range c.nodes {
		if n != nil && n.running() {
			out = append(out, galeraDSN("root", "", fmt.Sprintf("127.0.0.1:%d", c.base+i), ""))
		}
	}
	return out
}

func (c *GaleraCluster) writeState() error {
	st := galeraState{Base: c.base, Owner: c.owner, URLs: c.URLs()}
	for _, n := range c.nodes {
		if n != nil && n.running() {
			st.PIDs = append(st.PIDs, n.pid())
		}
	}
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("galera: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "cluster.json"), raw, 0o644); err != nil {
		return fmt.Errorf("galera: %w", err)
	}
	return nil
}

func (n *galeraNode) running() bool {
	if n == nil {
		return false
	}
	p := n.proc.Load()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (n *galeraNode) pid() int {
	if p := n.proc.Load(); p != nil {
		return p.pid
	}
	return 0
}

func (n *galeraNode) waitExit(d time.Duration) bool {
	if n == nil || n.proc.Load() == nil {
		return true
	}
	select {
	case <-n.proc.Load().done:
		return true
	case <-time.After(d):
		return false
	}
}

// spawner forks every owned node from one goroutine locked to its OS thread
// for the life of the process, so that Pdeathsig fires only when the whole
// process exits (it is tied to the forking thread).
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func spawn(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: this thread lives until exit
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}

// --- the datadir template ---

// galeraTemplate returns a cached, freshly initialised datadir (root with an
// empty password), made once per MariaDB version with mariadb-install-db.
func galeraTemplate(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, mariadbdPath(), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("galera: mariadbd --version: %w", err)
	}
	sum := sha256.Sum256(out)
	cache, err := os.UserCacheDir()
	if err != nil || cache == "" {
		cache = os.TempDir()
	}
	root := filepath.Join(cache, "voltro", "galera")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("galera: %w", err)
	}
	dir := filepath.Join(root, "datadir-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, "mysql", "user.frm")); err == nil {
		return dir, nil
	}
	lock, err := os.OpenFile(filepath.Join(root, "template.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", fmt.Errorf("galera: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("galera: lock template: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mysql", "user.frm")); err == nil {
		return dir, nil
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	args := []string{"--no-defaults", "--datadir=" + tmp, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--innodb-log-file-size=16M"}
	if os.Geteuid() == 0 {
		// The cache may sit where the mysql user cannot reach (/root);
		// each copy is chowned to the user its node runs as.
		args = append(args, "--user=root")
	}
	if b, err := exec.CommandContext(ctx, "mariadb-install-db", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("galera: mariadb-install-db: %w: %s", err, b)
	}
	// Sockets, pid files and logs belong to each node, not to the template.
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("galera: %w", err)
	}
	return dir, nil
}

// galeraCredential returns the mysql user's credential when running as root
// (the rsync SST daemon would otherwise drop to "nobody"), nil otherwise.
func galeraCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		return nil, nil // run as root with --user=root
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("galera: bad mysql uid/gid %q/%q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func chownTree(dir string, uid, gid int) error {
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("galera: chown %s: %w", dir, err)
	}
	return nil
}

func mariadbdPath() string {
	if p, err := exec.LookPath("mariadbd"); err == nil {
		return p
	}
	return "/usr/sbin/mariadbd"
}

// pidRunsFrom reports whether pid is a live mariadbd started with a config
// under dir, so that a recycled PID is never killed.
func pidRunsFrom(pid int, dir string) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	cmdline := string(raw)
	return strings.Contains(cmdline, "mariadbd") && strings.Contains(cmdline, dir+"/")
}

// pidAlive reports whether pid exists and is not a zombie.
func pidAlive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(raw)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func waitFor(ctx context.Context, d time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%w (last error: %w)", ctx.Err(), lastErr)
			}
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
