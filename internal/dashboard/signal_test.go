package dashboard_test

// The dashboard's signal action, end to end through an instance's
// inspect server: refused without the admin token, and with it the signal
// reaches the run waiting for it.

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

var dashWait = voltro.NewWorkflow("dash.wait", func(wc *voltro.WorkflowContext, in string) (string, error) {
	word, err := voltro.AwaitSignal[string](wc, "word", 0)
	if err != nil {
		return "", err
	}
	return in + " " + word, nil
})

func TestSignalAction(t *testing.T) {
	ctx := context.Background()
	url := testdb.Postgres(t, "dashsignal")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	env := map[string]string{
		"DB_URL": url, "POD_NAME": "dash-signal", "VOLTRO_CLUSTER_SECRET": "s",
		"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(port),
		"VOLTRO_INSPECT_ADDR": "127.0.0.1:0", "VOLTRO_ADMIN_TOKEN": adminToken,
	}
	app, err := voltro.New(ctx, voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(dashWait); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	h, err := dashWait.Start(ctx, app, "hello")
	if err != nil {
		t.Fatal(err)
	}
	api := "http://" + app.InspectAddr() + dashboard.Prefix + "api/runs/" + h.ID
	testwait.For(t, within, "the run to wait for its signal", func() bool {
		code, body := call(t, "GET", api, "", "")
		var v struct{ Status string }
		_ = json.Unmarshal([]byte(body), &v)
		return code == 200 && v.Status == "suspended"
	})
	sig := `{"name":"word","payload":"world"}`
	if code, body := call(t, "POST", api+"/signal", "", sig); code != http.StatusUnauthorized {
		t.Fatalf("a signal without the admin token: %d %s", code, body)
	}
	if code, body := call(t, "POST", api+"/signal", "wrong-token", sig); code != http.StatusUnauthorized {
		t.Fatalf("a signal with a wrong token: %d %s", code, body)
	}
	code, body := call(t, "POST", api+"/signal", adminToken, sig)
	if code != http.StatusOK || !strings.Contains(body, `delivered`) {
		t.Fatalf("the signal with the admin token: %d %s", code, body)
	}
	rctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	out, err := h.Result(rctx)
	if err != nil || out != "hello world" {
		t.Fatalf("the run after the dashboard's signal: %q, %v", out, err)
	}
}
