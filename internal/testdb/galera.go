// Galera test clusters: three real mariadbd processes with the galera-4
// provider on loopback ports, started from a cached mariadb-install-db
// datadir, with helpers to kill and restart nodes for failover tests. The
// same code backs `go run ./internal/testdb/cmd/galera up|down`, which
// scripts/test uses to share one cluster among all test packages.

package testdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/voltro/voltro/internal/config"
)

// GaleraURLsEnv names the variable through which scripts/test hands its
// running cluster to every test package: comma-separated mariadb:// URLs,
// one per node, without a database.
const GaleraURLsEnv = config.EnvTestGaleraURLs

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
	paused  atomic.Bool                // stopped by Pause, not resumed yet
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
	n.paused.Store(false)
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

// WaitSize waits until every running node that is not paused is Synced and
// reports wsrep_cluster_size = want.
func (c *GaleraCluster) WaitSize(ctx context.Context, want int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		ok := true
		var last string
		for i := range galeraNodes {
			if !c.nodes[i].running() || c.nodes[i].paused.Load() {
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
	c.Heal()
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
	if st.Base != 0 {
		healChain(galeraChain(st.Base))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("galera: remove %s: %w", dir, err)
	}
	return nil
}

// --- starting and stopping nodes ---
