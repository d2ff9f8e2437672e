// Faults of a Galera test cluster beyond a kill: pausing a node's process
// (SIGSTOP: its clients hang) and cutting one node from the other two with
// iptables rules that match only this cluster's Galera ports, plus the node
// status the tests wait on.

package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Pause sends SIGSTOP to node i: the process keeps its sockets open and
// answers nothing, so its clients hang until their own deadlines, and the
// other nodes evict it once it misses evs.inactive_timeout.
func (c *GaleraCluster) Pause(i int) error {
	return c.signal(i, syscall.SIGSTOP, "pause")
}

// Resume sends SIGCONT to node i after Pause.
func (c *GaleraCluster) Resume(i int) error {
	return c.signal(i, syscall.SIGCONT, "resume")
}

func (c *GaleraCluster) signal(i int, sig syscall.Signal, what string) error {
	n := c.nodes[i]
	if !n.running() {
		return fmt.Errorf("galera: %s node %d: not running", what, i)
	}
	if err := syscall.Kill(n.pid(), sig); err != nil {
		return fmt.Errorf("galera: %s node %d (pid %d): %w", what, i, n.pid(), err)
	}
	n.paused.Store(sig == syscall.SIGSTOP)
	c.log.Info("galera: node "+what+"d", "node", i, "pid", n.pid())
	return nil
}

// Partition cuts node i off from the other two: every TCP packet between
// node i's Galera address and theirs that comes from or goes to one of this
// cluster's Galera ports (gcomm, IST, SST) is dropped. SQL ports stay open,
// so clients still reach node i and see what a minority node answers. It
// needs root and iptables (scripts/services.sh installs it). The rules live
// in a chain of this cluster's own, removed by Heal and by Stop; a chain
// left by a process that died is removed when the next cluster claims the
// same ports.
func (c *GaleraCluster) Partition(i int) error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("galera: partition needs iptables (run scripts/services.sh): %w", err)
	}
	if os.Geteuid() != 0 {
		return errors.New("galera: partition needs root (iptables)")
	}
	c.Heal()
	chain := c.chain()
	if err := iptables("-N", chain); err != nil {
		return err
	}
	var ports []string
	for _, n := range c.nodes {
		ports = append(ports, strconv.Itoa(n.gcomm), strconv.Itoa(n.ist), strconv.Itoa(n.sst))
	}
	for j := range galeraNodes {
		if j == i {
			continue
		}
		for _, pair := range [][2]string{{c.nodes[i].addr, c.nodes[j].addr}, {c.nodes[j].addr, c.nodes[i].addr}} {
			if err := iptables("-A", chain, "-s", pair[0], "-d", pair[1], "-p", "tcp",
				"-m", "multiport", "--ports", strings.Join(ports, ","), "-j", "DROP"); err != nil {
				c.Heal()
				return err
			}
		}
	}
	if err := iptables("-I", "INPUT", "-j", chain); err != nil {
		c.Heal()
		return err
	}
	c.log.Info("galera: node partitioned", "node", i, "chain", chain)
	return nil
}

// Heal removes the rules of Partition. It is safe to call when there are none.
func (c *GaleraCluster) Heal() {
	if c.base == 0 {
		return
	}
	healChain(c.chain())
}

func (c *GaleraCluster) chain() string { return galeraChain(c.base) }

// galeraChain names the iptables chain of the cluster at base.
func galeraChain(base int) string { return fmt.Sprintf("VOLTRO-GALERA-%d", base) }

// healChain unhooks and deletes chain, quietly when it does not exist or
// iptables is not installed.
func healChain(chain string) {
	if _, err := exec.LookPath("iptables"); err != nil || os.Geteuid() != 0 {
		return
	}
	if iptables("-n", "-L", chain) != nil {
		return
	}
	for iptables("-D", "INPUT", "-j", chain) == nil {
	}
	_ = iptables("-F", chain)
	_ = iptables("-X", chain)
}

func iptables(args ...string) error {
	// -w: wait for the xtables lock rather than fail when another
	// process holds it.
	out, err := exec.Command("iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("galera: iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NodeStatus is what node i says about itself (wsrep_ready,
// wsrep_cluster_status, wsrep_cluster_size, wsrep_local_state_comment,
// lower-case keys). A paused node does not answer: ctx bounds the wait.
func (c *GaleraCluster) NodeStatus(ctx context.Context, i int) (map[string]string, error) {
	return c.status(ctx, i)
}
