package status_test

// Test helpers: in-process apps, a child instance process that can be
// SIGKILLed, a direct store handle, and polling Collect.

import (
	"bufio"
	"context"
	"github.com/voltro/voltro/internal/status"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// loopbackName is a host name for runners to advertise that is not the
// literal localhost/127.0.0.1 the status flags, yet resolves only to
// loopback on this machine (its hostname, via /etc/hosts), so no test
// traffic leaves 127.0.0.0/8. "" when there is none.
func loopbackName(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil || h == "" || strings.EqualFold(h, "localhost") {
		return ""
	}
	ips, err := net.LookupIP(h)
	if err != nil || len(ips) == 0 {
		return ""
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return ""
		}
	}
	return h
}

// startApp starts an in-process app with env (nothing read from the
// process environment but the registry variables the engine reads) and
// registers items.
func startApp(t *testing.T, env map[string]string, items ...voltro.Registrable) *voltro.App {
	t.Helper()
	ctx := context.Background()
	lookup := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == registry.EnvDir || k == registry.EnvProcess {
			return os.Getenv(k) // set per test with t.Setenv
		}
		return ""
	}
	app, err := voltro.New(ctx, voltro.WithEnv(lookup), voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(items...); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	return app
}

// child is an instance in its own process.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startChild runs the test binary as an instance with env (plus PATH and
// HOME) and waits until it serves.
func startChild(t *testing.T, env map[string]string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{roleEnv + "=instance", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		store.MaxConnsEnv + "=" + os.Getenv(store.MaxConnsEnv)} // the test budget's pool cap
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "READY") || strings.HasPrefix(sc.Text(), "BOOTFAIL") {
				ready <- sc.Text()
			}
		}
		_ = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(c.kill)
	select {
	case l := <-ready:
		if !strings.HasPrefix(l, "READY") {
			t.Fatalf("child instance: %s", l)
		}
	case <-c.exited:
		t.Fatal("child instance exited during boot")
	case <-time.After(30 * time.Second):
		t.Fatal("child instance not ready after 30s")
	}
	return c
}

// kill SIGKILLs the child and reaps it (a zombie would still look alive).
func (c *child) kill() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// look opens the store of dbURL as the CLI would.
func look(t *testing.T, dbURL string) (store.Driver, config.Config) {
	t.Helper()
	cfg, err := config.FromEnv(func(string) string { return "" }, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	d, err := open.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, cfg
}

func collect(t *testing.T, o status.Options) *status.Report {
	t.Helper()
	r, _, err := status.Collect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitReport collects until cond holds, failing after within.
func waitReport(t *testing.T, o status.Options, within time.Duration, what string, cond func(*status.Report) bool) *status.Report {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := collect(t, o)
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			_ = status.WriteTable(&b, r, false)
			t.Fatalf("timed out after %s waiting for %s; last status:\n%s", within, what, b.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func byReplica(r *status.Report) map[string]status.Instance {
	m := map[string]status.Instance{}
	for _, in := range r.Instances {
		m[in.ReplicaID] = in
	}
	return m
}

// tableLine is the line of the rendered table that starts with replica.
func tableLine(table, replica string) string {
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(strings.TrimPrefix(l, status.AnsiRed), replica+" ") || strings.HasPrefix(strings.TrimPrefix(l, status.AnsiYellow), replica+" ") {
			return l
		}
	}
	return ""
}
