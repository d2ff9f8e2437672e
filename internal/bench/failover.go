package bench

// Failover and restart recovery, with real worker processes: a run's second
// step blocks on the victim, the victim is killed with SIGKILL, and the clock
// runs until the run completes on a live instance (or a fresh one).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/sharding"
)

// blocking is the failover workload: step 2 never returns on a worker
// started with VOLTRO_BENCH_BLOCK=1.
func blocking(out func(string), block bool) *voltro.Workflow[int, int] {
	return voltro.NewWorkflow("bench.block", func(wc *voltro.WorkflowContext, n int) (int, error) {
		a, err := voltro.Step(wc, "one", func(ctx context.Context) (int, error) { out("STEP one"); return n + 1, nil })
		if err != nil {
			return 0, err
		}
		b, err := voltro.Step(wc, "two", func(ctx context.Context) (int, error) {
			out("STEP two")
			if block {
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return a + 1, nil
		})
		if err != nil {
			return 0, err
		}
		return voltro.Step(wc, "three", func(ctx context.Context) (int, error) { out("STEP three"); return b + 1, nil })
	})
}

// Worker is `voltro bench worker`: a process hosting bench.block, printing
// READY and every step it runs.
func Worker(ctx context.Context, env func(string) string) error {
	var mu sync.Mutex
	out := func(s string) {
		mu.Lock()
		fmt.Println(s)
		mu.Unlock()
	}
	app, err := voltro.New(ctx, voltro.WithEnv(env), voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		return err
	}
	if err := app.Register(blocking(out, config.BenchBlock(env))); err != nil {
		return err
	}
	if err := app.Start(ctx); err != nil {
		return err
	}
	out("READY")
	<-ctx.Done()
	return app.Close(context.WithoutCancel(ctx))
}

type worker struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan struct{}
	addr  string
}

func startWorker(cfg WorkflowsConfig, port int, block bool, name string) (*worker, error) {
	cmd := exec.Command(cfg.Executable, "bench", "worker")
	env := config.ProcessEnviron()
	env = append(env, "DB_URL="+cfg.DBURL, "POD_NAME="+name, "VOLTRO_WORKFLOW_RUNNER_HOST=127.0.0.1",
		"VOLTRO_WORKFLOW_RUNNER_PORT="+strconv.Itoa(port), config.EnvBenchBlock+"="+map[bool]string{true: "1", false: "0"}[block])
	if cfg.Env != nil {
		env = append(env, config.Forward(cfg.Env, "VOLTRO_CLUSTER_SECRET", "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT", "VOLTRO_WORKFLOW_SHARD_LOCK")...)
	}
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &worker{cmd: cmd, done: make(chan struct{}), addr: "127.0.0.1:" + strconv.Itoa(port)}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
		}
		_ = cmd.Wait()
		close(w.done)
	}()
	if !w.waitLine("READY", 60*time.Second) {
		w.kill()
		return nil, fmt.Errorf("worker %s did not start", name)
	}
	return w, nil
}

func (w *worker) count(line string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.lines {
		if l == line {
			n++
		}
	}
	return n
}

func (w *worker) waitLine(line string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if w.count(line) > 0 {
			return true
		}
		select {
		case <-w.done:
			return w.count(line) > 0
		case <-time.After(5 * time.Millisecond):
		}
	}
	return false
}

func (w *worker) kill() time.Time {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	at := time.Now()
	<-w.done
	return at
}

func (w *worker) stop() {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(20 * time.Second):
		w.kill()
	}
}

// measureFailover: restart=false kills a worker while a survivor runs;
// restart=true kills the only worker and starts a fresh one.
func measureFailover(ctx context.Context, cfg WorkflowsConfig, restart bool) (time.Duration, string, error) {
	if cfg.Executable == "" {
		return 0, "", fmt.Errorf("no voltro executable to start workers from")
	}
	pv, err := freePort()
	if err != nil {
		return 0, "", err
	}
	victim, err := startWorker(cfg, pv, true, "bench-victim")
	if err != nil {
		return 0, "", err
	}
	defer victim.kill()
	var survivor *worker
	if !restart {
		ps, _ := freePort()
		if survivor, err = startWorker(cfg, ps, false, "bench-survivor"); err != nil {
			return 0, "", err
		}
		defer survivor.stop()
	}
	// a client to start the run and wait for it
	cp, _ := freePort()
	env := overlay(cfg.Env, map[string]string{"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(cp), "POD_NAME": "bench-client"})
	client, err := voltro.New(ctx, voltro.WithDB(cfg.DBURL), voltro.WithEnv(env), voltro.WithLogger(cfg.Logger))
	if err != nil {
		return 0, "", err
	}
	defer client.Close(context.WithoutCancel(ctx))
	if err := client.Start(ctx); err != nil {
		return 0, "", err
	}
	wf := blocking(func(string) {}, false)
	// pick a key whose run lands on a shard the victim holds
	key, err := keyOwnedBy(ctx, client, victim.addr, "bench.block")
	if err != nil {
		return 0, "", err
	}
	h, err := wf.Start(ctx, client, 1, voltro.WithKey(key))
	if err != nil {
		return 0, "", err
	}
	if !victim.waitLine("STEP two", 30*time.Second) {
		return 0, "", fmt.Errorf("the victim never reached step two")
	}
	killed := victim.kill()
	if restart {
		ps, _ := freePort()
		if survivor, err = startWorker(cfg, ps, false, "bench-fresh"); err != nil {
			return 0, "", err
		}
		defer survivor.stop()
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	v, err := h.Result(rctx)
	seen := time.Since(killed)
	if err != nil {
		return 0, "", err
	}
	if v != 4 {
		return 0, "", fmt.Errorf("run returned %d, want 4", v)
	}
	// Completion is when the run's final state committed, by the database
	// clock on this same machine: the client, in another process, learns
	// of it by polling, up to half a second later.
	st, err := client.Get(ctx, h.ID)
	if err != nil {
		return 0, "", err
	}
	took := seen
	if st.FinishedAt != nil {
		took = st.FinishedAt.Sub(killed.Round(0))
	}
	ones := victim.count("STEP one") + survivor.count("STEP one")
	note := fmt.Sprintf("step one ran %d time(s), step two resumed on %s; the polling client saw it after %s",
		ones, map[bool]string{true: "a fresh process", false: "the live survivor"}[restart], seen.Round(time.Millisecond))
	if ones != 1 {
		return took, note, fmt.Errorf("completed step one ran again: %s", note)
	}
	return took, note, nil
}

// keyOwnedBy finds an idempotency key whose run's shard the ledger gives
// owner, waiting for the owner to hold shards.
func keyOwnedBy(ctx context.Context, app *voltro.App, owner, workflow string) (string, error) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		owners, total, err := app.ShardOwners(ctx)
		if err != nil {
			return "", err
		}
		held := map[string]bool{}
		for s, o := range owners {
			if o == owner {
				held[s] = true
			}
		}
		if len(held) > 0 {
			for i := 0; i < 100000; i++ {
				key := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
				if held[sharding.For("default", voltro.ExecutionID(workflow, key), total)] {
					return key, nil
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", fmt.Errorf("%s holds no shards", strings.TrimSpace(owner))
}
