package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/demo"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/instance"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/sharding"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// A database reader takes the cluster secret from voltro_cluster_secret
// and, on loopback, calls the runner ports of a cluster on PostgreSQL as
// its runners do: routed starts to the holder of every shard, and pushes
// of runs' ends to the instance that routed them.
//
// It cannot plant the run of a key before the key's real start (with or
// without the key in the call), nor a parent's child, nor claim a subject
// or a source: each is refused and no row is written. A plain start is
// taken, as any runner's is, and recorded as routed. A forged push of a
// routed run's end gets its waiter nothing but a read of the real row.
func TestAttackerWithTheSecretOnRoutedStarts(t *testing.T) {
	url := testdb.Postgres(t, "attackrouted")
	holder := startProc(t, "holder", map[string]string{"DB_URL": url, "VOLTRO_CLUSTER_SECRET": "", "E2E_CHAINS": "0"})
	port := freePort(t)
	env := map[string]string{"DB_URL": url, "POD_NAME": "starter",
		"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(port)}
	starterAddr := "127.0.0.1:" + strconv.Itoa(port)
	var inst *instance.Instance
	built := voltro.Option(func(s *instance.Setup) { s.Built = func(in *instance.Instance) { inst = in } })
	ctx := context.Background()
	app, err := voltro.New(ctx, voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), built)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	d := look(t, url)
	var secret string
	if err := d.Capabilities().SQL.QueryRowContext(ctx, `SELECT secret FROM voltro_cluster_secret`).Scan(&secret); err != nil {
		t.Fatal(err)
	}
	source := func(id string) string {
		sc, _ := d.GetStartContext(ctx, id)
		return sc.Source
	}

	// The starter routes plain starts to the holder once each lists the
	// other (the starter hosts nothing, so every shard is the holder's).
	in := demo.ChainInput{Steps: 6, StepMillis: 400}
	var h *voltro.Handle[demo.ChainOutput]
	testwait.For(t, 30*time.Second, "a start routed to the holder", func() bool {
		if h, err = demo.Chain.Start(ctx, app, in); err != nil {
			t.Fatal(err)
		}
		return source(h.ID) == "routed"
	})

	type result struct {
		out demo.ChainOutput
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := h.Result(ctx)
		done <- result{out, err}
	}()
	wf := inst.Workflows
	testwait.For(t, 10*time.Second, "the caller waits for the routed run", func() bool { return slices.Contains(wf.Awaited(), h.ID) })

	// The attacker, as the holder, pushes that the run ended, with a
	// forged result in the body runners of earlier versions believed.
	forged, _ := json.Marshal(map[string]any{"ID": h.ID, "Name": "demo.chain", "Status": "completed", "Output": []byte(`{"values":["forged"]}`)})
	if err := rpc.NewClient(secret, holder.addr).PushRunsEnded(ctx, starterAddr, rpc.RunsEnded{Runs: []rpc.RunEnded{{RunID: h.ID, Body: forged}}}); err != nil {
		t.Fatalf("the push: %v", err)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if len(got.out.Values) != in.Steps || strings.Contains(strings.Join(got.out.Values, ","), "forged") {
		t.Fatalf("the waiter got %q, not the run's result", got.out.Values)
	}
	if x, err := d.GetExecution(ctx, h.ID); err != nil || strings.Contains(string(x.Output), "forged") {
		t.Fatalf("stored output %s %v", x.Output, err)
	}

	// Routed starts as the starter, which the holder lists.
	attacker := rpc.NewClient(secret, starterAddr)
	start := func(exec map[string]any, sc map[string]any) error {
		body, _ := json.Marshal(map[string]any{"Exec": exec, "Context": sc})
		_, err := attacker.Start(ctx, holder.addr, rpc.StartRequest{Shard: sharding.For("default", exec["ID"].(string), 300), Body: body})
		return err
	}
	evil := []byte(`{"steps":1,"stepMillis":1}`)
	keyed := voltro.ExecutionID("demo.chain", "order-42")
	parent := h.ID
	for _, c := range []struct {
		what     string
		exec, sc map[string]any
	}{
		{"the run of a key, with the key", map[string]any{"ID": keyed, "Name": "demo.chain", "Key": "order-42", "Input": evil}, nil},
		{"the run of a key, without it", map[string]any{"ID": keyed, "Name": "demo.chain", "Input": evil}, nil},
		{"a parent's child", map[string]any{"ID": parent + "/7", "Name": "demo.chain", "Input": evil, "ParentID": parent, "ParentClose": "abandon"}, nil},
		{"a child id alone", map[string]any{"ID": parent + "/8", "Name": "demo.chain", "Input": evil}, nil},
		{"a subject", map[string]any{"ID": freshID(), "Name": "demo.chain", "Input": evil}, map[string]any{"Subject": "admin"}},
		{"a source", map[string]any{"ID": freshID(), "Name": "demo.chain", "Input": evil}, map[string]any{"Source": "cli"}},
	} {
		err := start(c.exec, c.sc)
		if !errors.Is(err, errs.ErrNotOwner) {
			t.Errorf("a routed start of %s: %v (want a refusal)", c.what, err)
		}
		if _, err := d.GetExecution(ctx, c.exec["ID"].(string)); !errors.Is(err, errs.ErrNotFound) {
			t.Errorf("a routed start of %s was stored: %v", c.what, err)
		}
	}
	// The key's real start, later, gets its own run and input.
	kh, err := demo.Chain.Start(ctx, app, demo.ChainInput{Steps: 2, StepMillis: 5}, voltro.WithKey("order-42"))
	if err != nil || kh.ID != keyed {
		t.Fatalf("the keyed start: %v %v", kh, err)
	}
	if x, err := d.GetExecution(ctx, keyed); err != nil || string(x.Input) != `{"steps":2,"stepMillis":5}` || x.Key != "order-42" {
		t.Fatalf("the keyed run: key %q, input %s, %v", x.Key, x.Input, err)
	}
	if s := source(keyed); s != "api" {
		t.Fatalf("the keyed run's source is %q", s)
	}

	// What the secret does give: a plain start of a hosted workflow, with
	// an input of the caller's, recorded as routed with no subject.
	plain := freshID()
	if err := start(map[string]any{"ID": plain, "Name": "demo.chain", "Input": evil}, map[string]any{"Source": "api"}); err != nil {
		t.Fatalf("a plain routed start: %v", err)
	}
	if sc, err := d.GetStartContext(ctx, plain); err != nil || sc.Subject != "" || sc.Source != "routed" {
		t.Fatalf("the plain routed start was recorded as %+v (%v)", sc, err)
	}
}

// freshID is a run id of the form a start without a key gets.
func freshID() string {
	var b [13]byte
	_, _ = rand.Read(b[:])
	return "wf_" + hex.EncodeToString(b[:])
}
