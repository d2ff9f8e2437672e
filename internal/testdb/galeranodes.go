// Starting and stopping the nodes of a Galera test cluster: ports, data
// directories, processes, their state and recovery.

package testdb

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

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
		// So are the partition rules of a process that died mid-test.
		healChain(galeraChain(p))
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
