package e2e

// Input a typed workflow cannot decode is refused by `voltro workflows
// start` before anything is queued, by the input schema the hosting runner
// publishes in its row; --force queues it anyway (and it fails as before).

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testwait"
)

func TestStartInputSchema(t *testing.T) {
	for _, db := range sqlDatabases {
		t.Run(db.name, func(t *testing.T) { startInputSchema(t, db.url(t, "inputschema")) })
	}
}

func startInputSchema(t *testing.T, url string) {
	ctx := context.Background()
	env := map[string]string{"DB_URL": url, "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s"}
	p := startDemo(t, "schema-a", env)
	p.waitOutput(t, "voltro demo is running", 60*time.Second)
	d := look(t, url)
	ws := store.Workflows(d)
	testwait.For(t, 30*time.Second, "the runner row publishes demo.chain's input schema", func() bool {
		rs, err := d.ListRunners(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(rs) == 1 && strings.Contains(rs[0].Meta, `"workflow/demo.chain":{"type":"object"`)
	})
	runs := func() []store.Execution {
		xs, err := ws.ListExecutions(ctx, store.ExecutionFilter{Name: "demo.chain"})
		if err != nil {
			t.Fatal(err)
		}
		return xs
	}

	// The wrong type is refused, saying where and what, and nothing is queued.
	code, out, errOut := cli(t, env, "workflows", "start", "demo.chain", "--input", `{"steps":"two","stepMillis":1.5}`)
	if code != 1 || out != "" ||
		!strings.Contains(errOut, `the input does not fit workflow "demo.chain"`) ||
		!strings.Contains(errOut, `input.stepMillis: expected integer (int64), got number 1.5: an integer takes no fraction or exponent`) ||
		!strings.Contains(errOut, `input.steps: expected integer (int64), got string "two"`) ||
		!strings.Contains(errOut, "--force") {
		t.Fatalf("start with a wrong-type input: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := cli(t, env, "workflows", "start", "demo.chain", "--input", `[1]`); code != 1 || !strings.Contains(errOut, "input: expected object, got array") {
		t.Fatalf("start with an array for an object: exit %d %q", code, errOut)
	}
	if xs := runs(); len(xs) != 0 {
		t.Fatalf("a refused start queued a run: %+v", xs)
	}

	// Input that decodes starts: unknown fields and null pass, as in encoding/json.
	for _, in := range []string{`{"steps":1,"stepMillis":1,"note":"extra"}`, "null"} {
		code, out, errOut = cli(t, env, "workflows", "start", "demo.chain", "--input", in)
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Fatalf("start with %s: exit %d %q %q", in, code, out, errOut)
		}
	}

	// --force skips the check; the run then fails as the check said it would.
	code, out, errOut = cli(t, env, "workflows", "start", "demo.chain", "--input", `{"steps":"two"}`, "--force")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("forced start: exit %d %q %q", code, out, errOut)
	}
	id := strings.TrimSpace(out)
	testwait.For(t, 30*time.Second, "the forced run fails to decode its input", func() bool {
		x, err := ws.GetExecution(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return x.Status == store.ExecFailed && strings.Contains(errs.Decode(x.Error).Error(), "cannot decode input")
	})
	if xs := runs(); len(xs) != 3 {
		t.Fatalf("want the 3 accepted runs, got %d", len(xs))
	}
}
