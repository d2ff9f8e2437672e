package status_test

// The inspect token goes only to trusted inspect hosts. Runner rows and
// registry entries are written by anyone who can write the database or the
// registry directory; here they point at real listeners on this machine that
// record the Authorization header they get. A host is judged by how the
// address is written: the machine's hostname (resolving to loopback, but
// not loopback as written) is untrusted by default, and a test trust set
// that holds only 127.0.0.1 makes 127.0.0.2 untrusted. `voltro cluster
// status` and `voltro logs` must never send the token there, ask without
// it, and say so.

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/voltro/voltro/internal/status"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/inspectclient"
	"github.com/voltro/voltro/internal/observe/cli"
	"github.com/voltro/voltro/internal/observe/serve"
	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
)

const inspectToken = "status-inspect-token-0123456789"

// harvester is a listener that records the Authorization header of every
// request. open: it answers as an instance without a token would (an
// inspect document, a log ring naming replica); otherwise 401, as an
// instance with a token does. redirect, when set, sends every request there.
type harvester struct {
	addr     string // host:port as the row writes it
	mu       sync.Mutex
	auth     []string
	replica  string
	runner   string
	open     bool
	redirect string
}

func harvest(t *testing.T, bind, host, replica, runner string, open bool) *harvester {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(bind, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", bind, err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	h := &harvester{addr: net.JoinHostPort(host, port), replica: replica, runner: runner, open: open}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

func (h *harvester) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.auth = append(h.auth, r.Header.Get("Authorization"))
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case h.redirect != "":
		http.Redirect(w, r, "http://"+h.redirect+r.URL.RequestURI(), http.StatusFound)
	case !h.open:
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"missing or wrong bearer token (VOLTRO_INSPECT_TOKEN)"}`))
	case r.URL.Path == serve.PathLogs:
		w.Header().Set(serve.HeaderReplica, h.replica)
		w.Header().Set(serve.HeaderRunner, h.runner)
		_, _ = w.Write([]byte("[]"))
	default:
		_ = json.NewEncoder(w).Encode(inspect.Doc{ReplicaID: h.replica, RunnerAddress: h.runner, Tier: "full", Health: inspect.Health{Ready: true}})
	}
}

func (h *harvester) calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auth...)
}

// neverSawToken fails the test if the listener ever got the token.
func (h *harvester) neverSawToken(t *testing.T, what string) {
	t.Helper()
	for _, a := range h.calls() {
		if strings.Contains(a, inspectToken) {
			t.Fatalf("%s (%s) got the inspect token: %q", what, h.addr, a)
		}
	}
}

func (h *harvester) sawToken() bool {
	for _, a := range h.calls() {
		if a == "Bearer "+inspectToken {
			return true
		}
	}
	return false
}

// trustFromEnv reads VOLTRO_INSPECT_TRUSTED_HOSTS the way the CLI does.
func trustFromEnv(t *testing.T, value string) inspectclient.Trust {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string {
		if k == inspectclient.EnvTrustedHosts {
			return value
		}
		return ""
	}, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	return cfg.InspectTrust
}

func TestInspectTokenOnlyToTrustedRunnerRows(t *testing.T) {
	url := testdb.Postgres(t, "status_token")
	regDir := t.TempDir()
	t.Setenv(registry.EnvDir, regDir)
	name := loopbackName(t)
	if name == "" {
		t.Fatal("this test needs the machine's hostname to resolve to loopback only (as /etc/hosts does here): it is the address that looks like another machine's")
	}
	// A real instance behind the token, on loopback: trusted by default.
	startApp(t, map[string]string{
		"DB_URL": url, "POD_NAME": "token-real", "VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1",
		"VOLTRO_WORKFLOW_RUNNER_PORT": freePort(t), "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s",
		"VOLTRO_CLUSTER_SECRET": "status-secret", "VOLTRO_SHARDS": "8", "VOLTRO_INSPECT_TOKEN": inspectToken,
	}, workEntity())
	st, cfg := look(t, url)
	ctx := context.Background()

	// Rows any database user can write, pointing at listeners of theirs:
	// one under the machine's name, one on 127.0.0.2. No groups and no
	// entity types, so the real runner never gives them shards.
	byName := harvest(t, "127.0.0.1", name, "token-name", "10.66.0.1:34000", false)
	onTwo := harvest(t, "127.0.0.2", "127.0.0.2", "token-two", "10.66.0.2:34000", true)
	for _, h := range []*harvester{byName, onTwo} {
		if err := st.RegisterRunner(ctx, store.Runner{Address: h.runner, ReplicaID: h.replica, InspectAddr: h.addr, Healthy: true, Groups: []string{}}); err != nil {
			t.Fatal(err)
		}
	}

	o := status.Options{Store: st, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database, RegistryDir: regDir,
		Heartbeat: 10 * time.Second, InspectToken: inspectToken}
	r := waitReport(t, o, 30*time.Second, "the real instance ready behind its token", func(r *status.Report) bool {
		in := byReplica(r)["token-real"]
		return in.Ready != nil && *in.Ready
	})
	real, named := byReplica(r)["token-real"], byReplica(r)["token-name"]
	byName.neverSawToken(t, "a runner row under the machine's name, by default")
	if real.TokenWithheld != "" || !real.Reachable {
		t.Fatalf("the loopback instance: %+v", real)
	}
	if len(byName.calls()) == 0 || named.Reachable ||
		named.TokenWithheld != name+" is not a trusted inspect host; set VOLTRO_INSPECT_TRUSTED_HOSTS (networks such as 10.0.0.0/8, or host names, comma-separated) to send VOLTRO_INSPECT_TOKEN there" ||
		!strings.Contains(named.UnreachableReason, "401: the instance wants the inspect token, which was withheld from this host") {
		t.Fatalf("the row under the machine's name (asked %d times): %+v", len(byName.calls()), named)
	}
	if two := byReplica(r)["token-two"]; two.TokenWithheld != "" || !onTwo.sawToken() {
		t.Fatalf("127.0.0.2 is loopback, trusted by default: %+v, saw %q", two, onTwo.calls())
	}
	var table bytes.Buffer
	if err := status.WriteTable(&table, r, false); err != nil {
		t.Fatal(err)
	}
	if l := tableLine(table.String(), "token-name"); !strings.Contains(l, "TOKEN-WITHHELD") || !strings.Contains(l, "UNREACHABLE") {
		t.Fatalf("the row's line: %q\n%s", l, table.String())
	}
	if !strings.Contains(table.String(), "! token-name TOKEN WITHHELD: "+name+" is not a trusted inspect host; set VOLTRO_INSPECT_TRUSTED_HOSTS") {
		t.Fatalf("the table does not say the token was withheld:\n%s", table.String())
	}
	var js bytes.Buffer
	if err := status.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, loadSchema(t), js.Bytes())

	// A trust set holding only 127.0.0.1: the listener on 127.0.0.2, which
	// answers without a token, is asked without one and shown, marked.
	only, err := inspectclient.OnlyTrust("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	before := len(onTwo.calls())
	o.InspectTrust = only
	r = collect(t, o)
	for _, a := range onTwo.calls()[before:] {
		if a != "" {
			t.Fatalf("an untrusted 127.0.0.2 got %q", a)
		}
	}
	if two := byReplica(r)["token-two"]; !two.Reachable || !strings.HasPrefix(two.TokenWithheld, "127.0.0.2 is not a trusted inspect host") {
		t.Fatalf("the open listener on 127.0.0.2: %+v", two)
	}
	if real := byReplica(r)["token-real"]; !real.Reachable || real.TokenWithheld != "" {
		t.Fatalf("the real instance on 127.0.0.1: %+v", real)
	}
	table.Reset()
	_ = status.WriteTable(&table, r, false)
	if l := tableLine(table.String(), "token-two"); !strings.Contains(l, "TOKEN-WITHHELD") || strings.Contains(l, "UNREACHABLE") {
		t.Fatalf("the open row's line: %q\n%s", l, table.String())
	}

	// voltro logs, default trust: the real instance's records, and a note
	// on stderr for the row the token was withheld from.
	lo := cli.LogsOptions{Store: st, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database, RegistryDir: regDir,
		Format: "json", InspectToken: inspectToken}
	var out, errb bytes.Buffer
	if err := cli.Logs(ctx, lo, &out, &errb); err != nil {
		t.Fatalf("logs: %v\n%s", err, errb.String())
	}
	byName.neverSawToken(t, "voltro logs, a runner row under the machine's name")
	if !strings.Contains(out.String(), `"replicaId":"token-real"`) {
		t.Fatalf("the real instance's records are missing:\n%s", out.String())
	}
	if want := "voltro logs: token-name (token-name) at " + byName.addr + ": token withheld: " + name + " is not a trusted inspect host; set VOLTRO_INSPECT_TRUSTED_HOSTS"; !strings.Contains(errb.String(), want) ||
		!strings.Contains(errb.String(), "refused (401): the instance wants the inspect token, which was withheld from this host") {
		t.Fatalf("stderr does not say the token was withheld (want %q):\n%s", want, errb.String())
	}

	// VOLTRO_INSPECT_TRUSTED_HOSTS naming the host: the token goes there.
	o.InspectTrust = trustFromEnv(t, "10.0.0.0/8,"+name)
	r = collect(t, o)
	if !byName.sawToken() || byReplica(r)["token-name"].TokenWithheld != "" {
		t.Fatalf("trusted by name: saw %q, row %+v", byName.calls(), byReplica(r)["token-name"])
	}
}

func TestInspectTokenOnlyToTrustedRegistryEntries(t *testing.T) {
	regDir := t.TempDir()
	only, err := inspectclient.OnlyTrust("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	trusted := harvest(t, "127.0.0.1", "127.0.0.1", "reg-trusted", "local:reg-trusted", true)
	untrusted := harvest(t, "127.0.0.2", "127.0.0.2", "reg-untrusted", "local:reg-untrusted", true)
	// a trusted address that redirects to the untrusted listener
	bouncer := harvest(t, "127.0.0.1", "127.0.0.1", "reg-bouncer", "local:reg-bouncer", true)
	bouncer.redirect = untrusted.addr
	for _, h := range []*harvester{trusted, untrusted, bouncer} {
		if _, err := registry.Write(regDir, registry.Entry{ReplicaID: h.replica, PID: os.Getpid(), Process: "reg", Dialect: "sqlite",
			Database: "/tmp/reg.db", InspectAddr: h.addr, RunnerAddress: h.runner, Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	r := collect(t, status.Options{RegistryDir: regDir, InspectToken: inspectToken, InspectTrust: only})
	untrusted.neverSawToken(t, "an untrusted registry entry")
	if !trusted.sawToken() {
		t.Fatalf("the trusted entry's listener saw %q", trusted.calls())
	}
	if in := byReplica(r)["reg-untrusted"]; !in.Reachable || !strings.HasPrefix(in.TokenWithheld, "127.0.0.2 is not a trusted inspect host") {
		t.Fatalf("the untrusted entry: %+v", in)
	}
	bounced := byReplica(r)["reg-bouncer"]
	if !bouncer.sawToken() || bounced.Reachable || bounced.TokenWithheld != "" ||
		!strings.Contains(bounced.UnreachableReason, "redirected to") || !strings.Contains(bounced.UnreachableReason, "not followed") {
		t.Fatalf("the redirecting entry (saw %q): %+v", bouncer.calls(), bounced)
	}
	// the one call the untrusted listener got was its own entry's
	if got := untrusted.calls(); len(got) != 1 {
		t.Fatalf("the untrusted listener was called %d times: %q", len(got), got)
	}

	var out, errb bytes.Buffer
	if err := cli.Logs(context.Background(), cli.LogsOptions{RegistryDir: regDir, InspectToken: inspectToken, InspectTrust: only}, &out, &errb); err != nil {
		t.Fatalf("logs: %v\n%s", err, errb.String())
	}
	untrusted.neverSawToken(t, "voltro logs, an untrusted registry entry")
	if got := untrusted.calls(); len(got) != 2 {
		t.Fatalf("voltro logs called the untrusted listener %d times in all: %q", len(got), got)
	}
	for _, want := range []string{
		"voltro logs: reg-untrusted (reg) at " + untrusted.addr + ": token withheld: 127.0.0.2 is not a trusted inspect host; set VOLTRO_INSPECT_TRUSTED_HOSTS",
		"voltro logs: reg-bouncer (reg) at " + bouncer.addr + ": unreachable: ",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	if strings.Contains(errb.String(), "reg-trusted") {
		t.Errorf("stderr names the trusted entry:\n%s", errb.String())
	}
}
