package e2e

// Real runner processes for the end-to-end tests: the test binary re-executes
// itself in the "runner" role (see TestMain), hosts the e2e.work entity type,
// and reports each delivery on stdout. Tests kill them with SIGKILL.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/demo"
	"github.com/voltro/voltro/internal/store"
)

const roleEnv = "VOLTRO_E2E_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "runner" {
		os.Exit(runnerMain())
	}
	os.Exit(m.Run())
}

// Work is the e2e entity's message.
type Work struct {
	N int `json:"n"`
}

// runnerMain is the child process.
func runnerMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	app, err := voltro.New(ctx, voltro.WithLogger(log))
	if err != nil {
		fmt.Println("BOOTFAIL", err)
		return 3
	}
	work, _ := time.ParseDuration(os.Getenv("E2E_WORK"))
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		fmt.Printf(format+"\n", args...)
		outMu.Unlock()
	}
	w := voltro.NewEntity("e2e.work", func(ctx context.Context, id string, m Work) (int, error) {
		info, _ := voltro.CurrentMessage(ctx)
		say("START %d %s %d", info.ID, id, time.Now().UnixNano())
		select {
		case <-time.After(work):
		case <-ctx.Done():
			say("CANCEL %d %s %d", info.ID, id, time.Now().UnixNano())
			return 0, ctx.Err()
		}
		say("END %d %s %d", info.ID, id, time.Now().UnixNano())
		return m.N + 1, nil
	})
	chains, _ := strconv.Atoi(os.Getenv("E2E_CHAINS"))
	if os.Getenv("E2E_CHAINS") != "" {
		if err := app.Register(demo.Chain); err != nil {
			fmt.Println("BOOTFAIL", err)
			return 3
		}
	}
	if os.Getenv("E2E_SLEEPERS") != "" {
		if err := app.Register(demo.Nap); err != nil {
			fmt.Println("BOOTFAIL", err)
			return 3
		}
	}
	if os.Getenv("E2E_RETENTION") != "" {
		if err := registerRetention(app); err != nil {
			fmt.Println("BOOTFAIL", err)
			return 3
		}
	}
	if os.Getenv("E2E_FANOUT") != "" {
		if err := app.Register(fanOut(say), fanChild); err != nil {
			fmt.Println("BOOTFAIL", err)
			return 3
		}
	}
	if os.Getenv("E2E_QUEUE") != "" {
		if err := app.Register(e2eQueue, queuedJob); err != nil {
			fmt.Println("BOOTFAIL", err)
			return 3
		}
	}
	other := voltro.NewEntity("e2e.other", func(ctx context.Context, id string, m Work) (int, error) { return m.N, nil })
	if os.Getenv("E2E_HOST_OTHER") != "" {
		if err := app.Register(other); err != nil {
			fmt.Println("BOOTFAIL", err)
			return 3
		}
	}
	if coord := os.Getenv("E2E_SCHED"); coord != "" {
		tick := voltro.NewSchedule("e2e.tick", "@every 1s", func(ctx context.Context, at time.Time) error {
			say("TICK %d %d", at.Unix(), time.Now().UnixNano())
			return nil
		}, voltro.Coordination(voltro.ScheduleCoordination(coord)))
		if err := app.Register(tick); err != nil {
			fmt.Println("BOOTFAIL", err)
			return 3
		}
	}
	late, _ := time.ParseDuration(os.Getenv("E2E_REGISTER_AFTER"))
	if late == 0 {
		if err := app.Register(w); err != nil {
			fmt.Println("BOOTFAIL", err)
			return 3
		}
	}
	if err := app.Start(ctx); err != nil {
		fmt.Println("BOOTFAIL", err)
		return 3
	}
	for i := 0; i < chains; i++ {
		h, err := demo.Chain.Start(ctx, app, demo.ChainInput{Steps: 4, StepMillis: 300})
		if err != nil {
			fmt.Println("BOOTFAIL start a chain:", err)
			return 3
		}
		say("CHAIN %s", h.ID)
	}
	say("READY %s", app.InspectAddr())
	if n, _ := strconv.Atoi(os.Getenv("E2E_SLEEPERS")); n > 0 {
		go sleepers(ctx, app, n, say)
	}
	if late > 0 {
		go func() {
			time.Sleep(late)
			if err := app.Register(w); err != nil {
				say("REGFAIL %v", err)
				return
			}
			say("REGISTERED %d", time.Now().UnixNano())
		}()
	}
	if hog, _ := time.ParseDuration(os.Getenv("E2E_HOG_POOL_AFTER")); hog > 0 {
		go hogPool(app, hog, say)
	}
	<-ctx.Done()
	_ = app.Close(context.Background())
	say("CLOSED")
	return 0
}

// hogPool takes every connection of the app pool for E2E_HOG_FOR, so the
// runner's pool probe starves.
func hogPool(app *voltro.App, after time.Duration, say func(string, ...any)) {
	time.Sleep(after)
	db, _, err := app.DB()
	if err != nil {
		say("HOGFAIL %v", err)
		return
	}
	n, _ := strconv.Atoi(os.Getenv("E2E_POOL_SIZE"))
	if n == 0 {
		// the whole application pool: its cap, as the store sets it
		if n, _ = config.MaxConns(store.DefaultMaxConns); n == 0 {
			n = store.DefaultMaxConns
		}
	}
	var conns []interface{ Close() error }
	for i := 0; i < n; i++ {
		c, err := db.Conn(context.Background())
		if err != nil {
			say("HOGFAIL %v", err)
			return
		}
		conns = append(conns, c)
	}
	say("HOGGED %d %d", len(conns), time.Now().UnixNano())
	hold, _ := time.ParseDuration(os.Getenv("E2E_HOG_FOR"))
	time.Sleep(hold)
	for _, c := range conns {
		_ = c.Close()
	}
	say("UNHOGGED %d", time.Now().UnixNano())
}

// proc is a running child.
type proc struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	addr    string
	mu      sync.Mutex
	lines   []string
	logs    []map[string]any
	stderr  []string // stderr lines that are not log records (a panic, a SIGQUIT dump)
	inspect string
	exited  chan struct{}
	killed  time.Time
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProc starts a runner process with env on top of a clean base.
func startProc(t *testing.T, name string, env map[string]string) *proc {
	t.Helper()
	return startBinary(t, name, exec.Command(os.Args[0], "-test.run=^$"), map[string]string{roleEnv: "runner"}, env)
}

// startBinary starts cmd as a runner process named name, with role and
// env on top of a clean base, and waits for its READY line.
func startBinary(t *testing.T, name string, cmd *exec.Cmd, role, env map[string]string) *proc {
	t.Helper()
	base := map[string]string{
		"POD_NAME":                    name,
		"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1",
		"VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(freePort(t)),
		"VOLTRO_CLUSTER_SECRET":       "e2e-secret",
		"PATH":                        os.Getenv("PATH"),
		"HOME":                        os.Getenv("HOME"),
		// the test budget's pool cap (scripts/test) reaches the child too
		store.MaxConnsEnv: os.Getenv(store.MaxConnsEnv),
	}
	for k, v := range role {
		base[k] = v
	}
	for k, v := range env {
		base[k] = v
	}
	for k, v := range base {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	p := &proc{t: t, name: name, cmd: cmd, exited: make(chan struct{}), addr: base["VOLTRO_WORKFLOW_RUNNER_HOST"] + ":" + base["VOLTRO_WORKFLOW_RUNNER_PORT"]}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var rec map[string]any
			p.mu.Lock()
			if json.Unmarshal(sc.Bytes(), &rec) == nil {
				p.logs = append(p.logs, rec)
			} else {
				p.stderr = append(p.stderr, sc.Text())
			}
			p.mu.Unlock()
		}
	}()
	go func() {
		wg.Wait()
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			// what the process said last: the only account of a run
			// that stalled inside it
			<-p.exited
			p.mu.Lock()
			defer p.mu.Unlock()
			var b strings.Builder
			for _, rec := range p.logs[max(0, len(p.logs)-failLogLines):] {
				line, _ := json.Marshal(rec)
				b.Write(line)
				b.WriteByte('\n')
			}
			for _, l := range p.stderr[max(0, len(p.stderr)-failLogLines):] {
				b.WriteString(l + "\n")
			}
			t.Logf("%s (%s), its last log records:\n%s", p.name, p.addr, b.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if addr, ok := p.find("READY "); ok {
			p.inspect = addr
			break
		}
		if l, ok := p.find("BOOTFAIL "); ok {
			t.Fatalf("%s failed to boot: %s", name, l)
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited during boot; logs: %v", name, p.logTail(10))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 30s", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// failLogLines is how many of a process's last log records a failed test
// prints.
const failLogLines = 60

func (p *proc) find(prefix string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.lines {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			return rest, true
		}
	}
	return "", false
}

func (p *proc) output() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

func (p *proc) logRecords() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.logs...)
}

// logged reports whether the process has logged a record with message msg.
func (p *proc) logged(msg string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rec := range p.logs {
		if rec["msg"] == msg {
			return true
		}
	}
	return false
}

func (p *proc) logTail(n int) []map[string]any {
	l := p.logRecords()
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return l
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() time.Time {
	select {
	case <-p.exited:
		return p.killed
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.killed = time.Now()
	<-p.exited
	return p.killed
}

// term asks for a graceful stop and waits.
func (p *proc) term() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.t.Errorf("%s did not stop within 30s of SIGTERM", p.name)
		p.kill()
	}
}

// event is one START/END/CANCEL line.
type event struct {
	kind string
	id   int64
	ent  string
	at   time.Time
	proc string
}

func (p *proc) events() []event {
	var out []event
	for _, l := range p.output() {
		f := strings.Fields(l)
		if len(f) != 4 || (f[0] != "START" && f[0] != "END" && f[0] != "CANCEL") {
			continue
		}
		id, _ := strconv.ParseInt(f[1], 10, 64)
		ns, _ := strconv.ParseInt(f[3], 10, 64)
		out = append(out, event{kind: f[0], id: id, ent: f[2], at: time.Unix(0, ns), proc: p.name})
	}
	return out
}

// sleepers starts n demo.nap runs that all wake at one moment, reports when
// every one is suspended, then when every one has completed.
func sleepers(ctx context.Context, app *voltro.App, n int, say func(string, ...any)) {
	for owned, total := app.Shards(); owned < total; owned, total = app.Shards() {
		time.Sleep(20 * time.Millisecond)
	}
	db, _, err := app.DB()
	if err != nil {
		say("SLEEPFAIL %v", err)
		return
	}
	count := func(status string) int {
		var k int
		_ = db.QueryRowContext(ctx, `SELECT count(*) FROM voltro_workflow_executions WHERE status = $1`, status).Scan(&k)
		return k
	}
	started := time.Now()
	wake := started.Add(sleepersWake(n))
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for int(next.Add(1)) <= n && failed.Load() == nil {
				if _, err := demo.Nap.Start(ctx, app, demo.NapInput{Seconds: time.Until(wake).Seconds()}); err != nil {
					failed.Store(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		say("SLEEPFAIL start: %v", err)
		return
	}
	startPhase := time.Since(started)
	if time.Now().After(wake) {
		say("SLEEPFAIL starting %d runs took %s, past their common wake-up", n, startPhase)
		return
	}
	for count("suspended") < n {
		if time.Now().After(wake) {
			say("SLEEPFAIL only %d of %d suspended before the wake-up", count("suspended"), n)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	say("SUSPENDED %d started in %s (%.0f/s), all suspended %s before the wake-up", n, startPhase.Round(time.Millisecond), float64(n)/startPhase.Seconds(), time.Until(wake).Round(time.Second))
	for count("completed") < n {
		if time.Since(wake) > 8*time.Minute {
			say("SLEEPFAIL only %d of %d completed", count("completed"), n)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	say("COMPLETED %d, %s after the common wake-up", n, time.Since(wake).Round(time.Millisecond))
}

// sleepersWake is how long after the start phase begins n sleepers of
// TestSuspensionAtScale all wake: time to start them at 200/s, plus 15 s.
func sleepersWake(n int) time.Duration { return time.Duration(n/200+15) * time.Second }
