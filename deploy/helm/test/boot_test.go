package test

// `voltro demo` booted with exactly the env the chart renders, against real
// PostgreSQL: the boot log must say what the deployment contract promises
// (runner address from POD_IP, the ordinal replica id, the dialect, CDC),
// the probes' paths must answer the kubelet without a token, the registry
// entry must land in the emptyDir, and SIGTERM must drain within the
// pod's grace.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func token(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func TestDemoBootsWithTheRenderedEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("builds voltro and boots it against PostgreSQL")
	}
	bin := buildVoltro(t)
	t.Run("plain", func(t *testing.T) {
		bootDemo(t, bin, "helm_boot", "", nil, "runner port: plain HTTP")
	})
	// The shared-certificate set-up the chart documents: one certificate
	// for a DNS name, runner.tls.serverName, mutual TLS.
	t.Run("mutual TLS", func(t *testing.T) {
		files := map[string]map[string]string{"shop-runner-tls": runnerTLSSecret(t, "runners.shop.internal")}
		bootDemo(t, bin, "helm_boot_tls",
			`runner: {tls: {enabled: true, secretName: shop-runner-tls, mutual: true, serverName: runners.shop.internal}}`, files,
			"runner port: mutual TLS (VOLTRO_RUNNER_TLS_CA), certificate for [runners.shop.internal]", "peers must be certified for runners.shop.internal")
	})
}

// bootDemo renders the chart with vals for a `voltro demo` container,
// boots it as pod <fullname>-1 with the rendered env, checks it, then
// stops it with SIGTERM while a workflow step runs. secretFiles are the
// files of the Secret volumes, by Secret name; runnerPort is what the boot
// log must say about the runner port.
func bootDemo(t *testing.T, bin, db, vals string, secretFiles map[string]map[string]string, runnerPort ...string) {
	ip := podIP(t)
	rport, iport := freePort(t, ip), freePort(t, ip)
	maxConns := os.Getenv("DB_MAX_CONNS") // the suite's connection budget
	if maxConns == "" {
		maxConns = "4"
	}
	r := mustRender(t, fmt.Sprintf(`
command: [voltro]
args: [demo]
runner: {port: %d}
inspect: {port: %d}
extraEnv: [{name: DB_MAX_CONNS, value: %q}]
`, rport, iport, maxConns), vals)
	c := r.container(t)
	secret := map[string]string{ // no VOLTRO_CDC_URL: an optional key
		"DB_URL": postgresDB(t, db), "VOLTRO_INSPECT_TOKEN": token(t),
		"VOLTRO_ADMIN_TOKEN": token(t), "VOLTRO_CLUSTER_SECRET": token(t),
	}
	p := pod{name: r.sts.Name + "-1", ip: ip, secret: secret, mounts: mountDirs(t, r, secretFiles)}
	env := resolveEnv(t, c.Env, p)
	t.Logf("env: %s", strings.Join(redacted(env, secret), " "))

	if len(c.Command) != 1 || c.Command[0] != "voltro" {
		t.Fatalf("command %v", c.Command)
	}
	cmd := exec.Command(bin, c.Args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	logs := collect(stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { <-logs.done; exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	waitFor(t, 90*time.Second, "the boot log's voltro started line", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("voltro demo exited at boot: %v\n%s", err, logs)
		default:
		}
		return logs.find("voltro started:") != ""
	})

	runner, inspect := hostPort(ip, rport), hostPort(ip, iport)
	tok := secret["VOLTRO_INSPECT_TOKEN"]
	checkBootLog(t, logs, runner, inspect, p.name)
	if logs.find(runnerPort...) == "" {
		t.Errorf("boot log has no line with %q:\n%s", runnerPort, logs)
	}
	checkProbes(t, c, ip, tok)
	checkInspect(t, inspect, tok, p.name, runner)
	registry := p.mounts[r.env(t, "VOLTRO_REGISTRY_DIR").Value]
	if files := filesIn(t, registry); len(files) != 1 || !strings.HasPrefix(files[0], p.name+"-") {
		t.Errorf("registry emptyDir holds %v, want one %s-<pid>.json", files, p.name)
	}

	// SIGTERM, as the kubelet sends it, while a step runs: the step
	// finishes, the instance leaves, all within the grace the chart computed.
	cli := func(args ...string) string {
		t.Helper()
		cc := exec.Command(bin, args...)
		cc.Env = []string{"DB_URL=" + secret["DB_URL"], "DB_MAX_CONNS=" + maxConns}
		out, err := cc.Output()
		if err != nil {
			t.Fatalf("voltro %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	id := cli("workflows", "start", "demo.chain", "--input", `{"steps":1,"stepMillis":3000}`)
	waitFor(t, 30*time.Second, "the demo to start run "+id, func() bool { return started(t, inspect, tok, id) })
	grace := time.Duration(*r.sts.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("voltro demo after SIGTERM: %v", err)
		}
	case <-time.After(grace):
		t.Fatalf("voltro demo still running %s (the pod's grace) after SIGTERM:\n%s", grace, logs)
	}
	t.Logf("left in %s of a %s grace; log:\n%s", time.Since(start).Round(time.Millisecond), grace, logs)
	if logs.find("workflow runner: left the cluster") == "" {
		t.Errorf("no 'left the cluster' after SIGTERM:\n%s", logs)
	}
	var run struct {
		Status string `json:"status"`
		Steps  []struct {
			Result json.RawMessage `json:"result"`
			Tries  []struct {
				Status  string `json:"status"`
				Replica string `json:"replicaId"`
			} `json:"tries"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(cli("workflows", "get", id, "--format", "json")), &run); err != nil {
		t.Fatal(err)
	}
	if run.Status != "completed" || len(run.Steps) != 1 || len(run.Steps[0].Result) == 0 || len(run.Steps[0].Tries) != 1 || run.Steps[0].Tries[0].Replica != p.name {
		t.Errorf("the step running at SIGTERM was not let finish on %s: %+v", p.name, run)
	}
	if files := filesIn(t, registry); len(files) != 0 {
		t.Errorf("registry entry left behind after a graceful stop: %v", files)
	}
}

// mountDirs gives every volume mount of the container a directory here,
// with the files of a Secret volume written into it.
func mountDirs(t *testing.T, r rendered, secretFiles map[string]map[string]string) map[string]string {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range r.sts.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	dirs := map[string]string{}
	for _, m := range r.container(t).VolumeMounts {
		dir := t.TempDir()
		if v := volumes[m.Name]; v.Secret != nil {
			files, ok := secretFiles[v.Secret.SecretName]
			if !ok {
				t.Fatalf("volume %s: no files for Secret %s", m.Name, v.Secret.SecretName)
			}
			for name, content := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o440); err != nil {
					t.Fatal(err)
				}
			}
		}
		dirs[m.MountPath] = dir
	}
	return dirs
}

// started reports whether the instance's log ring says it started run id
// (a Debug record, read from /_voltro/inspect/logs with the token).
func started(t *testing.T, inspect, tok, id string) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+inspect+"/_voltro/inspect/logs?tail=0", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var recs []struct {
		Msg   string         `json:"msg"`
		Attrs map[string]any `json:"attrs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&recs); err != nil {
		t.Fatalf("inspect logs: %v", err)
	}
	for _, r := range recs {
		if r.Msg == "workflow started" && r.Attrs["execution"] == id {
			return true
		}
	}
	return false
}

// checkBootLog: what the guide says the boot log tells an operator.
func checkBootLog(t *testing.T, logs *logLines, runner, inspect, replica string) {
	t.Helper()
	for _, want := range [][]string{
		{"workflow engine: cluster-sql, dialect=postgres"},
		{"workflow runner: address=" + runner + " replica=" + replica + " "},
		{"sql dialect resolved: postgres — CDC: LISTEN/NOTIFY"},
		{"shard-lock coordination: advisory locks (dialect=postgres, mode=auto"},
		{"inspect endpoint listening", "addr=" + inspect},
		{"voltro started: replica=" + replica + " runner=" + runner + " dialect=postgres tier=full cdc=", "coordination=advisoryLock inspect=" + inspect},
	} {
		if logs.find(want...) == "" {
			t.Errorf("boot log has no line with %q:\n%s", want, logs)
		}
	}
	// Nothing to warn about: no localhost runner, no bad port, a registry
	// that could be written, a long enough cluster secret.
	if l := logs.find("level=WARN"); l != "" {
		t.Errorf("boot warned: %s", l)
	}
	if l := logs.find("level=ERROR"); l != "" {
		t.Errorf("boot logged an error: %s", l)
	}
}

// checkProbes asks each probe's path as the kubelet does: the pod IP, the
// named port, no header. Readiness may take a moment (shards acquired).
func checkProbes(t *testing.T, c corev1.Container, ip, tok string) {
	t.Helper()
	get := func(url, auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := (&http.Client{Timeout: 3 * time.Second}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		g := p.HTTPGet
		url := fmt.Sprintf("http://%s%s", hostPort(ip, int(containerPort(t, c, g.Port.String()))), g.Path)
		var code int
		var body string
		waitFor(t, 30*time.Second, name+" probe "+url+" answering 200", func() bool {
			code, body = get(url, "")
			return code == http.StatusOK
		})
		// The verdict only, without the token.
		var doc map[string]any
		if err := json.Unmarshal([]byte(body), &doc); err != nil || len(doc) != 1 {
			t.Errorf("%s probe %s without a token: %q, want the verdict only", name, url, body)
		}
	}
	metrics := fmt.Sprintf("http://%s/_voltro/metrics", hostPort(ip, int(containerPort(t, c, "inspect"))))
	if code, _ := get(metrics, ""); code != http.StatusUnauthorized {
		t.Errorf("metrics without the token: %d, want 401", code)
	}
	if code, body := get(metrics, "Bearer "+tok); code != http.StatusOK || !strings.Contains(body, "voltro_ready 1") {
		t.Errorf("metrics with the token: %d, want 200 with voltro_ready 1", code)
	}
}

// checkInspect reads the inspect document with the Secret's token.
func checkInspect(t *testing.T, inspect, tok, replica, runner string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+inspect+"/_voltro/inspect/cluster", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		ReplicaID     string `json:"replicaId"`
		RunnerAddress string `json:"runnerAddress"`
		Dialect       string `json:"dialect"`
		Tier          string `json:"tier"`
		CDCFlavor     string `json:"cdcFlavor"`
		LocalhostRisk bool   `json:"localhostRisk"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("inspect: %d %v", resp.StatusCode, err)
	}
	if doc.ReplicaID != replica || doc.RunnerAddress != runner || doc.Dialect != "postgres" || doc.Tier != "full" || doc.LocalhostRisk || doc.CDCFlavor == "" {
		t.Errorf("inspect document %+v, want replica %s at %s, postgres, tier full, CDC on, no localhost risk", doc, replica, runner)
	}
}

// redacted is env with the Secret's values masked, for the test log.
func redacted(env []string, secret map[string]string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		for _, v := range secret {
			kv = strings.ReplaceAll(kv, v, "<secret>")
		}
		out[i] = kv
	}
	return out
}
