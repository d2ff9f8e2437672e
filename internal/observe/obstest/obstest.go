package obstest

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
)

// App says how to start one app.
type App struct {
	Replica    string
	AdminToken string
	Tracer     trace.TracerProvider
	Register   func(*voltro.App)
	// Env adds to (or overrides) the environment Start gives the app.
	Env map[string]string
}

// IsolateRegistry points the local runtime registry at a directory of the
// test's own, so tests leave no entries behind.
func IsolateRegistry(t *testing.T) { t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir()) }

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start starts an app on dbURL (8 shards, 500 ms heartbeat); it is closed
// when the test ends, and may be closed earlier.
func Start(t *testing.T, dbURL string, s App) *voltro.App {
	t.Helper()
	env := map[string]string{
		"DB_URL": dbURL, "POD_NAME": s.Replica, "VOLTRO_CLUSTER_SECRET": "obs-secret",
		"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(freePort(t)),
		"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "500ms", "VOLTRO_SHARDS": "8",
		"VOLTRO_ADMIN_TOKEN": s.AdminToken, "VOLTRO_REGISTRY_DIR": config.RegistryDirSetting(),
	}
	maps.Copy(env, s.Env)
	opts := []voltro.Option{voltro.WithEnv(func(k string) string { return env[k] }),
		voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})))}
	if s.Tracer != nil {
		opts = append(opts, voltro.WithTracerProvider(s.Tracer))
	}
	ctx := context.Background()
	app, err := voltro.New(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if s.Register != nil {
		s.Register(app)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	return app
}

// OpenStore opens and migrates the store of dbURL the way the CLI does.
func OpenStore(t *testing.T, dbURL string) (store.Driver, config.Config) {
	t.Helper()
	cfg, err := config.FromEnv(func(string) string { return "" }, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	d, err := open.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d, cfg
}

// Call makes one request to an app's inspect server.
func Call(t *testing.T, app *voltro.App, method, path, bearer string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+app.InspectAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// WaitFor polls cond until it holds or within has passed (then the test fails).
func WaitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Ctx is a context bounded for one test.
func Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// MetricValue finds the value of the first sample line starting with
// prefix (a name, plus labels as far as given).
func MetricValue(body, prefix string) (float64, bool) {
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			return v, err == nil
		}
	}
	return 0, false
}
