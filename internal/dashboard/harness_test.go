package dashboard_test

// The browser tests' cluster: `voltro demo` processes built from this
// tree on one PostgreSQL database, the CLI run against it, and one
// headless Chromium for the whole package.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voltro/voltro/internal/store"
)

const (
	adminToken = "dash-admin-token"
	heartbeat  = "500ms"
)

// pkg holds what every test of the package shares.
var pkg struct {
	bin        string // the voltro binary
	binErr     error
	browser    context.Context // the browser; a test opens a tab in it
	browserErr error
	stop       func()
	shots      string // where screenshots go
}

// TestMain builds the binary and starts the browser once, and closes both.
func TestMain(m *testing.M) {
	code := m.Run()
	if pkg.stop != nil {
		pkg.stop()
	}
	if pkg.bin != "" {
		_ = os.RemoveAll(filepath.Dir(pkg.bin))
	}
	os.Exit(code)
}

var binOnce, browserOnce sync.Once

func voltroBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "voltro-dashboard-bin")
		if err != nil {
			pkg.binErr = err
			return
		}
		pkg.bin = filepath.Join(dir, "voltro")
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", pkg.bin, "./cmd/voltro")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			pkg.binErr = fmt.Errorf("go build ./cmd/voltro: %v\n%s", err, out)
		}
	})
	if pkg.binErr != nil {
		t.Fatal(pkg.binErr)
	}
	return pkg.bin
}

// chromium finds the browser (Debian package chromium, installed by
// scripts/services.sh).
func chromium() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH: install the Debian package chromium (scripts/services.sh does)")
}

// tab opens a new tab of the package's browser, closed with the test.
func tab(t *testing.T) context.Context {
	t.Helper()
	browserOnce.Do(func() {
		path, err := chromium()
		if err != nil {
			pkg.browserErr = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
			chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1400, 900))
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		if err := chromedp.Do(bctx); err != nil {
			pkg.browserErr = fmt.Errorf("starting %s: %w", path, err)
			cancelBrowser()
			cancelAlloc()
			return
		}
		pkg.browser = bctx
		pkg.stop = func() { cancelBrowser(); cancelAlloc() }
	})
	if pkg.browserErr != nil {
		t.Fatal(pkg.browserErr)
	}
	ctx, cancel := chromedp.NewContext(pkg.browser)
	t.Cleanup(cancel)
	return ctx
}

// screenshot saves the page as NAME.png in the package's artifact
// directory ($VOLTRO_TEST_ARTIFACTS/dashboard, else a temporary one),
// logged so a failing run can be looked at.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if pkg.shots == "" {
		dir := os.Getenv("VOLTRO_TEST_ARTIFACTS")
		if dir == "" {
			dir = os.TempDir()
		}
		pkg.shots = filepath.Join(dir, "voltro-dashboard-screenshots")
		if err := os.MkdirAll(pkg.shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(pkg.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// proc is a running voltro process.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  strings.Builder
}

// baseEnv is what every process of a test cluster gets.
func baseEnv(dbURL string) map[string]string {
	return map[string]string{
		"DB_URL": dbURL, "CDC": "1", "VOLTRO_CLUSTER_SECRET": "dash-secret", "VOLTRO_SHARDS": "8",
		"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": heartbeat, "VOLTRO_ADMIN_TOKEN": adminToken,
		"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), store.MaxConnsEnv: os.Getenv(store.MaxConnsEnv),
		"VOLTRO_REGISTRY_DIR": os.Getenv("VOLTRO_REGISTRY_DIR"),
	}
}

// start runs voltro with args and env, killed when the test ends.
func start(t *testing.T, name string, env map[string]string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(voltroBin(t), args...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				p.mu.Lock()
				p.out.WriteString(sc.Text() + "\n")
				p.mu.Unlock()
			}
		}()
	}
	go func() { wg.Wait(); _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitOutput waits until the process printed substr (it fails the test
// if the process exits first).
func (p *proc) waitOutput(t *testing.T, substr string, within time.Duration) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(p.output(), substr) {
		select {
		case <-p.done:
			if !strings.Contains(p.output(), substr) {
				t.Fatalf("%s exited before printing %q:\n%s", p.name, substr, p.output())
			}
			return
		case <-deadline.C:
			t.Fatalf("%s did not print %q within %s:\n%s", p.name, substr, within, p.output())
		case <-tick.C:
		}
	}
}

// kill ends the process with SIGKILL: no graceful leave.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// cli runs one voltro command to its end and returns its stdout.
func cli(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	cmd := exec.Command(voltroBin(t), args...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("voltro %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
