package e2e

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/demo"
	"github.com/voltro/voltro/internal/testdb"
)

// A page of another site rebinds its own name to 127.0.0.1 and reads the
// inspect server (with the dashboard) of an instance that has no inspect
// token, as the browser would send it: Host evil.example. Every read is
// refused with 421 and nothing of the run's input comes back; the probes
// answer their verdict only. Loopback names, IP addresses and the names
// of VOLTRO_INSPECT_TRUSTED_HOSTS are answered; with a token set, every
// Host is (the token guards the reads).
func TestDNSRebindingGetsNothingFromTheInspectServer(t *testing.T) {
	url := testdb.Postgres(t, "rebind")
	ctx := context.Background()
	boot := func(extra map[string]string) *voltro.App {
		env := map[string]string{"DB_URL": url, "POD_NAME": "rebind",
			"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(freePort(t)),
			"VOLTRO_INSPECT_TRUSTED_HOSTS": "ops.internal"}
		for k, v := range extra {
			env[k] = v
		}
		app, err := voltro.New(ctx, voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Register(demo.Chain); err != nil {
			t.Fatal(err)
		}
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.Close(context.Background()) })
		return app
	}
	app := boot(nil)
	h, err := demo.Chain.Start(ctx, app, demo.ChainInput{Steps: 1, StepMillis: 4242})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Result(ctx); err != nil {
		t.Fatal(err)
	}
	ask := func(app *voltro.App, host, path string) (int, string, http.Header) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+app.InspectAddr()+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	_, port, _ := strings.Cut(app.InspectAddr(), ":")
	reads := []string{"/_voltro/ui/api/runs", "/_voltro/ui/api/runs/" + h.ID, "/_voltro/inspect/logs", "/_voltro/inspect/cluster", "/_voltro/metrics", "/_voltro/ui/"}
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.evil.example:" + port, "localhost.evil.example"} {
		for _, path := range reads {
			code, body, _ := ask(app, host, path)
			if code != http.StatusMisdirectedRequest || (strings.Contains(body, h.ID) || strings.Contains(body, "4242")) {
				t.Errorf("Host %s, %s: %d %.200s", host, path, code, body)
			}
		}
		if code, body, _ := ask(app, host, "/_voltro/health/ready"); code != http.StatusOK || strings.TrimSpace(body) != `{"ready": true}` && !strings.Contains(body, `"ready": true`) || strings.Contains(body, "replicaId") {
			t.Errorf("Host %s, readiness: %d %s", host, code, body)
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "app.localhost:" + port, "[::1]:" + port, "10.1.2.3:" + port, "ops.internal:" + port} {
		code, body, hd := ask(app, host, "/_voltro/ui/api/runs/"+h.ID)
		if code != http.StatusOK || !strings.Contains(body, "4242") {
			t.Errorf("Host %s: %d %.200s", host, code, body)
		}
		if hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("Host %s: headers %v", host, hd)
		}
	}
	tokened := boot(map[string]string{"VOLTRO_INSPECT_TOKEN": "tok-0123456789abcdef"})
	if code, body, _ := ask(tokened, "evil.example", "/_voltro/ui/api/runs/"+h.ID); code != http.StatusUnauthorized || strings.Contains(body, "4242") {
		t.Errorf("with a token, Host evil.example: %d %.200s", code, body)
	}
}
