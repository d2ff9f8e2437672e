package e2e

// One typo must not take the fleet out of service: a run of a workflow name
// no instance hosts leaves every instance ready, the cluster health route
// and `voltro cluster status` name it, and the CLI clears it.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testwait"
)

// cli runs the voltro binary with env and returns its exit code and output.
func cli(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, voltroBin(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), store.MaxConnsEnv + "=" + os.Getenv(store.MaxConnsEnv)}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("voltro %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

func TestUnknownWorkflowTypo(t *testing.T) {
	for _, db := range sqlDatabases {
		t.Run(db.name, func(t *testing.T) { unknownWorkflowTypo(t, db.url(t, "typo")) })
	}
}

func unknownWorkflowTypo(t *testing.T, url string) {
	ctx := context.Background()
	common := map[string]string{"DB_URL": url, "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s"}
	var inspect []string
	for _, name := range []string{"typo-a", "typo-b"} {
		addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		inspect = append(inspect, addr)
		// a fast poll makes the stall threshold its floor (5s), so the
		// checks below run past it
		p := startDemo(t, name, map[string]string{"DB_URL": url, "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s", "VOLTRO_POLL_INTERVAL": "200ms", "VOLTRO_INSPECT_ADDR": addr})
		p.waitOutput(t, "voltro demo is running", 60*time.Second)
	}
	d := look(t, url)
	testwait.For(t, 30*time.Second, "both instances own shards", func() bool {
		o := owners(t, d)
		return len(o) == 2
	})
	ready := func(addr string) (int, string) { return get(t, "http://"+addr+"/_voltro/health/ready") }
	cluster := func(addr string) (int, string) { return get(t, "http://"+addr+"/_voltro/health/cluster") }
	for _, a := range inspect {
		testwait.For(t, 20*time.Second, "ready and a healthy cluster", func() bool {
			c1, _ := ready(a)
			c2, _ := cluster(a)
			return c1 == 200 && c2 == 200
		})
	}

	// The typo is refused, naming what is hosted.
	code, out, errOut := cli(t, common, "workflows", "start", "nosuch", "--input", "{}")
	if code != 1 || !strings.Contains(errOut, `no live runner hosts workflow "nosuch"`) || !strings.Contains(errOut, "demo.chain") || out != "" {
		t.Fatalf("start of an unknown name: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if runs, err := store.Workflows(d).ListExecutions(ctx, store.ExecutionFilter{Name: "nosuch"}); err != nil || len(runs) != 0 {
		t.Fatalf("a refused start wrote a run: %v %v", runs, err)
	}
	// A hosted name still starts.
	if code, out, errOut := cli(t, common, "workflows", "start", "demo.chain", "--input", `{"steps":1}`); code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("start of a hosted name: exit %d %q %q", code, out, errOut)
	}
	// --force queues it anyway: the typo scenario.
	var ids []string
	for _, key := range []string{"k1", "k2"} {
		code, out, errOut := cli(t, common, "workflows", "start", "nosuch", "--input", "{}", "--key", key, "--force")
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Fatalf("forced start: exit %d %q %q", code, out, errOut)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	queued := time.Now()

	// Every instance stays ready, past the stall threshold; each one's
	// cluster health names the backlog.
	for _, a := range inspect {
		testwait.For(t, 10*time.Second, "cluster health names the typo", func() bool {
			code, body := cluster(a)
			return code == 503 && strings.Contains(body, `"entityType": "workflow/nosuch"`) && strings.Contains(body, `"messages": 2`)
		})
	}
	for time.Since(queued) < 7*time.Second {
		for _, a := range inspect {
			if code, body := ready(a); code != 200 {
				t.Fatalf("%s: readiness must stay 200 for a run nobody hosts: %d %s", a, code, body)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	code, out, errOut = cli(t, common, "cluster", "status", "--format", "json")
	if code != 0 {
		t.Fatalf("cluster status: exit %d %s", code, errOut)
	}
	var rep struct {
		Instances []struct {
			ReplicaID string `json:"replicaId"`
			Ready     *bool  `json:"ready"`
		} `json:"instances"`
		Shared struct {
			Messages struct {
				Unhosted []struct {
					EntityType string `json:"entityType"`
					Messages   int    `json:"messages"`
				} `json:"unhostedBacklog"`
			} `json:"messages"`
		} `json:"shared"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("cluster status json: %v\n%s", err, out)
	}
	if u := rep.Shared.Messages.Unhosted; len(u) != 1 || u[0].EntityType != "workflow/nosuch" || u[0].Messages != 2 {
		t.Fatalf("cluster status must name the unhosted backlog: %s", out)
	}
	readyRows := 0
	for _, in := range rep.Instances {
		if in.Ready != nil && *in.Ready {
			readyRows++
		}
	}
	if readyRows != 2 {
		t.Fatalf("cluster status must show both instances ready: %s", out)
	}
	if code, table, _ := cli(t, common, "cluster", "status"); code != 0 || !strings.Contains(table, "unhosted backlog: 2 message(s) for workflow/nosuch") {
		t.Fatalf("cluster status table: exit %d\n%s", code, table)
	}

	// Clearing it: cancel finishes one run at once ...
	code, out, errOut = cli(t, common, "workflows", "cancel", ids[0])
	if code != 0 || !strings.Contains(out, "cancelled: no live runner hosts its workflow; 1 pending message(s) dead-lettered") {
		t.Fatalf("cancel of a run nobody hosts: exit %d %q %q", code, out, errOut)
	}
	x, err := store.Workflows(d).GetExecution(ctx, ids[0])
	if err != nil || x.Status != store.ExecCancelled {
		t.Fatalf("the cancelled run: %+v %v", x, err)
	}
	// ... a type a live runner hosts is not dead-lettered by mistake ...
	if code, _, errOut := cli(t, common, "messages", "dead", "--type", "workflow/demo.chain"); code != 1 || !strings.Contains(errOut, "hosted by live runner") {
		t.Fatalf("dead-lettering a hosted type must be refused: exit %d %q", code, errOut)
	}
	// ... and messages dead clears the rest of the backlog.
	code, out, errOut = cli(t, common, "messages", "dead", "--type", "workflow/nosuch")
	if code != 0 || !strings.Contains(out, "1 pending message(s) of entity type workflow/nosuch dead-lettered") {
		t.Fatalf("messages dead: exit %d %q %q", code, out, errOut)
	}
	dead, err := d.ListMessages(ctx, store.MessageFilter{EntityType: "workflow/nosuch", State: store.StateDead})
	if err != nil || len(dead) != 2 {
		t.Fatalf("dead letters of workflow/nosuch: %+v %v", dead, err)
	}
	for _, a := range inspect {
		testwait.For(t, 10*time.Second, "a healthy cluster once cleared", func() bool { code, _ := cluster(a); return code == 200 })
		if code, body := ready(a); code != 200 {
			t.Fatalf("%s not ready: %s", a, body)
		}
	}
}
