package e2e

// Galera node faults under load, on a private 3-node cluster with one runner
// process on each node: the node of one runner is killed, paused (SIGSTOP:
// its clients hang) or cut off from the other two (iptables). Every run
// completes once, no shard has two owners at once (by the runners' logs
// and by the ledger), the runner on the bad node reports itself not ready
// and saying why, and it rejoins when its node does. An instance stopped
// while its node is paused exits promptly.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/demo"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// nodeFault is one way a Galera node goes bad, and how it comes back.
type nodeFault struct {
	name    string
	inflict func(c *testdb.GaleraCluster, i int) error
	recover func(ctx context.Context, c *testdb.GaleraCluster, i int) error
}

var nodeFaults = []nodeFault{
	{"kill", func(c *testdb.GaleraCluster, i int) error { return c.Kill(i) },
		func(ctx context.Context, c *testdb.GaleraCluster, i int) error { return c.Restart(ctx, i) }},
	{"pause", func(c *testdb.GaleraCluster, i int) error { return c.Pause(i) },
		func(_ context.Context, c *testdb.GaleraCluster, i int) error { return c.Resume(i) }},
	{"partition", func(c *testdb.GaleraCluster, i int) error { return c.Partition(i) },
		func(_ context.Context, c *testdb.GaleraCluster, i int) error { c.Heal(); return nil }},
}

// TestGaleraNodeFaults runs every fault in turn on one private cluster
// (each subtest leaves it whole again, on a fresh database).
func TestGaleraNodeFaults(t *testing.T) {
	c := testdb.NewGalera(t)
	for _, f := range nodeFaults {
		t.Run(f.name, func(t *testing.T) {
			if f.name == "partition" && os.Geteuid() != 0 {
				t.Skip("the partition needs root for iptables (CI runs as root)")
			}
			galeraFault(t, c, f)
		})
	}
	t.Run("shutdown-while-paused", func(t *testing.T) { shutdownWhilePaused(t, c) })
}

// shutdownWhilePaused: SIGTERM to the instance whose node is paused, while
// it holds shards with runs in flight, ends the process within the
// kubelet's default grace period (30 s) instead of waiting on every drain
// and release, and its runs complete on the others.
func shutdownWhilePaused(t *testing.T, c *testdb.GaleraCluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ps, _, handles := loadedCluster(ctx, t, c, "leave", 100, 5)
	victim := ps[faultVictimNode]
	if err := c.Pause(faultVictimNode); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = c.Resume(faultVictimNode)
		}
	}()
	termAt := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-victim.exited:
	case <-time.After(30 * time.Second):
		// Its goroutines say where it waits.
		_ = victim.cmd.Process.Signal(syscall.SIGQUIT)
		<-victim.exited
		victim.mu.Lock()
		dump := strings.Join(victim.stderr, "\n")
		victim.mu.Unlock()
		t.Fatalf("the instance on the paused node did not exit within 30 s of SIGTERM; its goroutines:\n%s", dump)
	}
	t.Logf("the instance on the paused node exited %s after SIGTERM", time.Since(termAt).Round(time.Millisecond))
	for _, h := range handles {
		if _, err := h.Result(ctx); err != nil {
			t.Fatalf("run %s: %v", h.ID, err)
		}
	}
	if err := c.Resume(faultVictimNode); err != nil {
		t.Fatal(err)
	}
	resumed = true
	if err := c.WaitSize(ctx, 3); err != nil {
		t.Fatal(err)
	}
}

const (
	faultRuns       = 300
	faultSteps      = 3
	faultHeartbeat  = 2 * time.Second // leases of 6 s
	faultVictimNode = 2
)

func galeraFault(t *testing.T, c *testdb.GaleraCluster, f nodeFault) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ps, d, handles := loadedCluster(ctx, t, c, f.name, faultRuns, 10)
	victim, survivors := ps[faultVictimNode], ps[:faultVictimNode]
	t.Cleanup(func() {
		if t.Failed() {
			logWarnings(t, victim)
		}
	})
	ledger := watchLedger(ctx, t, d)
	ready := watchReady(victim)
	testwait.For(t, 30*time.Second, "the victim's runner is ready before the fault", ready.isReady)
	if err := f.inflict(c, faultVictimNode); err != nil {
		t.Fatal(err)
	}
	// The fault is in force once inflict returns (iptables takes a while).
	at := time.Now()
	recovered := false
	defer func() {
		if !recovered {
			_ = f.recover(context.Background(), c, faultVictimNode)
		}
	}()
	for _, h := range handles {
		if _, err := h.Result(ctx); err != nil {
			t.Fatalf("run %s after the %s: %v", h.ID, f.name, err)
		}
	}
	lastRun := lastFinished(ctx, t, d, handles)
	testwait.For(t, 30*time.Second, "the survivors hold every shard", func() bool {
		o := owners(t, d)
		return o[survivors[0].addr]+o[survivors[1].addr] == 300
	})
	reowned := ledger.reownedAt(survivors)
	notReady := ready.notReady(at)
	if notReady == nil {
		t.Fatalf("the victim's runner did not report itself not ready; last probes: %v", ready.last(5))
	}
	t.Logf("%s: runs on the victim's shards completed elsewhere: the last run finished %s after the fault, every shard re-owned by survivors %s after it; the victim was not ready %s after it (%s)",
		f.name, lastRun.Sub(at).Round(time.Millisecond), reowned.Sub(at).Round(time.Millisecond), notReady.at.Sub(at).Round(time.Millisecond), notReady.why)

	back := time.Now()
	if err := f.recover(ctx, c, faultVictimNode); err != nil {
		t.Fatal(err)
	}
	recovered = true
	if err := c.WaitSize(ctx, 3); err != nil {
		t.Fatal(err)
	}
	synced := time.Now()
	testwait.For(t, 60*time.Second, "the victim's runner rejoins: ready and owning shards", func() bool {
		return ready.isReady() && owners(t, d)[victim.addr] > 0
	})
	t.Logf("%s: the victim's runner was ready and owned shards again %s after its node was Synced in a cluster of three (%s after the node was brought back)",
		f.name, time.Since(synced).Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	ready.stop()
	ledger.stop()

	checkRunsOnce(ctx, t, d, handles, victim.addr, at, back)
	checkSingleOwner(t, ps)
	ledger.check(t, victim.addr, at, back)
	if !ready.sawNotReadyBetween(at, back) {
		t.Fatal("the victim's runner never reported not ready while its node was bad")
	}
	if h := ready.hangs(); len(h) > 0 {
		t.Fatalf("the victim's readiness endpoint did not answer %d probes within 3 s, e.g. %s", len(h), h[0])
	}
}

// loadedCluster starts one runner process on each node of c (on a fresh
// database), waits until they share the shards, starts runs demo.chain runs
// and returns once the victim's runner has journaled minSteps steps.
func loadedCluster(ctx context.Context, t *testing.T, c *testdb.GaleraCluster, name string, runs, minSteps int) ([]*proc, store.Driver, []*voltro.Handle[demo.ChainOutput]) {
	if err := c.CreateDatabase(ctx, "voltro_t_galera"); err != nil {
		t.Fatal(err)
	}
	var ps []*proc
	for i := range 3 {
		ps = append(ps, startProc(t, fmt.Sprint(name, "-", i), map[string]string{
			"DB_URL": c.Node(i), "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": faultHeartbeat.String(), "E2E_CHAINS": "0",
		}))
	}
	cl := client(t, c.Node(0))
	d := look(t, c.Node(0))
	testwait.For(t, 60*time.Second, "shards spread over three runners", func() bool {
		o := owners(t, d)
		return o[ps[0].addr] == 100 && o[ps[1].addr] == 100 && o[ps[2].addr] == 100
	})
	handles := make([]*voltro.Handle[demo.ChainOutput], runs)
	for i := range handles {
		h, err := demo.Chain.Start(ctx, cl, demo.ChainInput{Steps: faultSteps, StepMillis: 200})
		if err != nil {
			t.Fatal(err)
		}
		handles[i] = h
	}
	db := d.Capabilities().SQL
	victim := ps[faultVictimNode]
	testwait.For(t, 30*time.Second, "the victim's runner has journaled steps", func() bool {
		var n int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM voltro_workflow_journal WHERE runner = ?", victim.addr).Scan(&n)
		return err == nil && n >= minSteps
	})
	return ps, d, handles
}

// logWarnings logs p's warnings and errors, to explain a failure.
func logWarnings(t *testing.T, p *proc) {
	for _, rec := range p.logRecords() {
		if lvl, _ := rec["level"].(string); lvl == "WARN" || lvl == "ERROR" {
			t.Logf("%s: %s %s %v", p.name, rec["time"], rec["msg"], rec["err"])
		}
	}
}

// lastFinished is when the last of the runs completed.
func lastFinished(ctx context.Context, t *testing.T, d store.Driver, hs []*voltro.Handle[demo.ChainOutput]) time.Time {
	ws := store.Workflows(d)
	var last time.Time
	for _, h := range hs {
		x, err := ws.GetExecution(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		last = maxTime(last, x.FinishedAt)
	}
	return last
}

// checkRunsOnce: every run completed with each step journaled once, and the
// victim's runner journaled nothing while its node was bad.
func checkRunsOnce(ctx context.Context, t *testing.T, d store.Driver, hs []*voltro.Handle[demo.ChainOutput], victim string, from, to time.Time) {
	ws := store.Workflows(d)
	moved := 0
	for _, h := range hs {
		x, err := ws.GetExecution(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		if x.Status != store.ExecCompleted {
			t.Fatalf("run %s: status %s", h.ID, x.Status)
		}
		j, err := ws.Journal(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		byVictim, elsewhere := false, false
		for _, e := range j {
			if e.Kind != store.JournalStep {
				continue
			}
			if names[e.Name] {
				t.Fatalf("run %s journaled %s twice: %+v", h.ID, e.Name, j)
			}
			names[e.Name] = true
			if e.Runner == victim && e.FinishedAt.After(from) && e.FinishedAt.Before(to) {
				t.Fatalf("run %s: the victim's runner journaled %s at %s, while its node was bad", h.ID, e.Name, e.FinishedAt)
			}
			byVictim = byVictim || e.Runner == victim
			elsewhere = elsewhere || (e.Runner != victim && e.StartedAt.After(from))
		}
		if len(names) != faultSteps {
			t.Fatalf("run %s journaled %d distinct steps, want %d: %+v", h.ID, len(names), faultSteps, j)
		}
		if byVictim && elsewhere {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no run begun by the victim's runner finished elsewhere: the fault came too late to mean anything")
	}
	t.Logf("%d runs begun on the victim's runner finished on the survivors", moved)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// --- the ledger, sampled ---

// ledgerWatch samples the shard ledger through a survivor's node: for each
// shard and epoch the owner, when it was acquired and the latest expiry
// seen.
type ledgerWatch struct {
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	leases map[string]map[int64]*leaseSeen // shard -> epoch -> what was seen
	full   map[string]time.Time            // first sample where the owners named held every shard between them
	err    error
}

type leaseSeen struct {
	owner            string
	acquired, expiry time.Time
	released         bool
}

func watchLedger(ctx context.Context, t *testing.T, d store.Driver) *ledgerWatch {
	w := &ledgerWatch{done: make(chan struct{}), leases: map[string]map[int64]*leaseSeen{}, full: map[string]time.Time{}}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			locks, err := d.ShardLocks(qctx)
			cancel()
			if err == nil {
				w.add(locks)
			}
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *ledgerWatch) add(locks []store.ShardLock) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range locks {
		if l.Epoch == 0 {
			continue
		}
		m := w.leases[l.Shard]
		if m == nil {
			m = map[int64]*leaseSeen{}
			w.leases[l.Shard] = m
		}
		s := m[l.Epoch]
		if s == nil {
			s = &leaseSeen{owner: l.Owner, acquired: l.AcquiredAt}
			m[l.Epoch] = s
		}
		if l.Owner == "" {
			s.released = true
		} else if s.owner != l.Owner && w.err == nil {
			w.err = fmt.Errorf("shard %s epoch %d named %s, then %s", l.Shard, l.Epoch, s.owner, l.Owner)
		}
		s.expiry = maxTime(s.expiry, l.ExpiresAt)
	}
}

// reownedAt is the first sample after which every shard was held by the
// given runners, at an epoch they acquired (the survivors of a fault).
func (w *ledgerWatch) reownedAt(ps []*proc) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, m := range w.leases {
		var top int64
		for e := range m {
			top = max(top, e)
		}
		s := m[top]
		ok := false
		for _, p := range ps {
			ok = ok || s.owner == p.addr
		}
		if ok {
			last = maxTime(last, s.acquired)
		}
	}
	return last
}

func (w *ledgerWatch) stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
}

// check: every shard of the victim's runner that another runner took
// between from and to (while the victim's node was bad, so it could
// release nothing) was taken only once the victim's lease had expired by
// the database clock. Outside that window a graceful release between two
// samples would look like an overlap.
func (w *ledgerWatch) check(t *testing.T, victim string, from, to time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatal(w.err)
	}
	if len(w.leases) != 300 {
		t.Fatalf("the ledger samples saw %d shards, want 300", len(w.leases))
	}
	handovers := 0
	for shard, m := range w.leases {
		epochs := make([]int64, 0, len(m))
		for e := range m {
			epochs = append(epochs, e)
		}
		sort.Slice(epochs, func(i, j int) bool { return epochs[i] < epochs[j] })
		for k := 1; k < len(epochs); k++ {
			prev, next := m[epochs[k-1]], m[epochs[k]]
			if prev.owner != victim || next.owner == victim || prev.released || next.acquired.Before(from) || next.acquired.After(to) {
				continue
			}
			handovers++
			if next.acquired.Before(prev.expiry) {
				t.Fatalf("shard %s: %s took epoch %d at %s, while %s's lease of epoch %d ran until %s",
					shard, next.owner, epochs[k], next.acquired.Format(time.StampMicro), prev.owner, epochs[k-1], prev.expiry.Format(time.StampMicro))
			}
		}
	}
	if handovers == 0 {
		t.Fatal("the ledger samples saw no lease of the victim's taken over: nothing was checked")
	}
	t.Logf("ledger: %d of the victim's leases taken over, each after it had expired", handovers)
}

// --- readiness, sampled ---

// readyWatch polls a runner's readiness endpoint; a probe that does not
// answer within 3 s is recorded as a hang, which is itself a defect.
type readyWatch struct {
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples []readySample
}

type readySample struct {
	at    time.Time
	ready bool
	why   string
}

func watchReady(p *proc) *readyWatch {
	w := &readyWatch{done: make(chan struct{})}
	hc := &http.Client{Timeout: 3 * time.Second}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			s := readySample{at: time.Now()}
			resp, err := hc.Get("http://" + p.inspect + inspect.PathReady)
			if err != nil {
				s.why = "probe failed: " + err.Error()
			} else {
				var h inspect.Health
				_ = json.NewDecoder(resp.Body).Decode(&h)
				resp.Body.Close()
				s.ready = resp.StatusCode == http.StatusOK && h.Ready
				var kinds []string
				for _, pr := range h.Problems {
					kinds = append(kinds, pr.Kind+": "+pr.Detail)
				}
				s.why = strings.Join(kinds, "; ")
			}
			w.mu.Lock()
			w.samples = append(w.samples, s)
			w.mu.Unlock()
			select {
			case <-w.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *readyWatch) stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
}

// notReady is the first 503 with reasons to a probe sent after from, nil
// before one.
func (w *readyWatch) notReady(from time.Time) *readySample {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.samples {
		if s := w.samples[i]; !s.ready && s.why != "" && !strings.HasPrefix(s.why, "probe failed") && !s.at.Before(from) {
			return &s
		}
	}
	return nil
}

func (w *readyWatch) last(n int) []readySample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]readySample(nil), w.samples[max(0, len(w.samples)-n):]...)
}

func (w *readyWatch) isReady() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.samples) > 0 && w.samples[len(w.samples)-1].ready
}

// sawNotReadyBetween: the probes answered not ready, with reasons, inside
// [from, to].
func (w *readyWatch) sawNotReadyBetween(from, to time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.samples {
		if !s.ready && s.why != "" && !strings.HasPrefix(s.why, "probe failed") && s.at.After(from) && s.at.Before(to) {
			return true
		}
	}
	return false
}

// hangs lists the probes that got no answer: a readiness endpoint that
// hangs fails the kubelet's probe without saying why.
func (w *readyWatch) hangs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range w.samples {
		if strings.HasPrefix(s.why, "probe failed") {
			out = append(out, s.at.Format(time.StampMilli)+" "+s.why)
		}
	}
	return out
}
