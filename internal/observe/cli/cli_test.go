package cli_test

// Across instances: one workflow's spans share a trace id while its start,
// first replay and resume run on three apps; `voltro traces` shows that
// run's timeline with both executing replicas; `voltro logs` merges the
// rings of two apps by time, from the runners table and from the local
// registry.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/observe/cli"
	"github.com/voltro/voltro/internal/observe/obstest"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
)

func provider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func one(t *testing.T, exp *tracetest.InMemoryExporter, where, name string) tracetest.SpanStub {
	t.Helper()
	ss := spansNamed(exp, name)
	if len(ss) != 1 {
		var names []string
		for _, s := range exp.GetSpans() {
			names = append(names, s.Name)
		}
		t.Fatalf("%s: %d span(s) named %q; it has %v", where, len(ss), name, names)
	}
	return ss[0]
}

func TestWorkflowSpansJoinAcrossInstances(t *testing.T) {
	obstest.IsolateRegistry(t)
	ctx := obstest.Ctx(t)
	url := testdb.Postgres(t, "obs_traces")
	tpA, expA := provider(t)
	tpB, expB := provider(t)
	tpC, expC := provider(t)
	var tries atomic.Int64
	trip := voltro.NewWorkflow("obs.trip", func(wc *voltro.WorkflowContext, n int) (int, error) {
		a, err := voltro.Step(wc, "one", func(ctx context.Context) (int, error) { return n + 1, nil })
		if err != nil {
			return 0, err
		}
		wc.Sleep(time.Second) // B must leave before the timer is due
		return voltro.Step(wc, "two", func(ctx context.Context) (int, error) {
			if tries.Add(1) == 1 {
				return 0, errors.New("flaky once")
			}
			return a * 10, nil
		}, voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 3, Backoff: func(int) time.Duration { return 10 * time.Millisecond }}))
	})
	register := func(a *voltro.App) {
		if err := a.Register(trip); err != nil {
			t.Fatal(err)
		}
	}
	// A only starts runs (it hosts nothing, so it owns no shards); B runs
	// the first replay; B leaves, C joins and resumes the run.
	appA := obstest.Start(t, url, obstest.App{Replica: "obs-a", Tracer: tpA})
	appB := obstest.Start(t, url, obstest.App{Replica: "obs-b", Tracer: tpB, Register: register})
	rctx, req := tpA.Tracer("test").Start(ctx, "request")
	h, err := trip.Start(rctx, appA, 4, voltro.WithKey("t1"))
	req.End()
	if err != nil {
		t.Fatal(err)
	}
	obstest.WaitFor(t, 15*time.Second, "the run to sleep on B", func() bool {
		s, err := appA.Get(ctx, h.ID)
		return err == nil && s.Status == "suspended"
	})
	if err := appB.Close(ctx); err != nil {
		t.Fatal(err)
	}
	obstest.Start(t, url, obstest.App{Replica: "obs-c", Tracer: tpC, Register: register})
	if got, err := h.Result(ctx); err != nil || got != 50 {
		t.Fatalf("result = %d, %v", got, err)
	}

	// the result is readable before the replay and its delivery end
	obstest.WaitFor(t, 10*time.Second, "C's replay and delivery spans", func() bool {
		return len(spansNamed(expC, "workflow obs.trip")) == 1 && len(spansNamed(expC, "message workflow/obs.trip")) == 1
	})
	traceID := req.SpanContext().TraceID()
	start := one(t, expA, "A", "workflow.start obs.trip")
	if start.SpanContext.TraceID() != traceID || start.Parent.SpanID() != req.SpanContext().SpanID() {
		t.Fatalf("the start span is not under the request: %v / %v", start.SpanContext.TraceID(), start.Parent.SpanID())
	}
	replayB := one(t, expB, "B", "workflow obs.trip")
	replayC := one(t, expC, "C", "workflow obs.trip")
	for _, r := range []tracetest.SpanStub{replayB, replayC} {
		if r.SpanContext.TraceID() != traceID {
			t.Fatalf("replay on %v has trace %s, want %s", r.Attributes, r.SpanContext.TraceID(), traceID)
		}
		if r.Parent.SpanID() != start.SpanContext.SpanID() || !r.Parent.IsRemote() {
			t.Fatalf("replay's parent is %s (remote %v), want the start span %s", r.Parent.SpanID(), r.Parent.IsRemote(), start.SpanContext.SpanID())
		}
		if len(r.Links) != 1 {
			t.Fatalf("replay links %d spans, want the delivery that woke it", len(r.Links))
		}
	}
	if v := attr(replayB, "voltro.workflow.outcome"); v != "suspended" {
		t.Fatalf("B's replay outcome %q", v)
	}
	if v := attr(replayC, "voltro.workflow.outcome"); v != "done" {
		t.Fatalf("C's replay outcome %q", v)
	}
	stepOne := one(t, expB, "B", "step one")
	stepTwo := spansNamed(expC, "step two")
	if len(stepTwo) != 2 || attr(stepTwo[0], "voltro.step.attempt") != "1" || attr(stepTwo[1], "voltro.step.attempt") != "2" {
		t.Fatalf("C has %d attempt spans of step two, want 2", len(stepTwo))
	}
	if stepOne.Parent.SpanID() != replayB.SpanContext.SpanID() || stepTwo[0].Parent.SpanID() != replayC.SpanContext.SpanID() || stepTwo[1].Parent.SpanID() != replayC.SpanContext.SpanID() {
		t.Fatal("a step span is not under its replay")
	}
	if len(spansNamed(expC, "step one")) != 0 {
		t.Fatal("the resume ran the journaled step again")
	}
	// the deliveries: the start message carries the start span's context,
	// the timer the context of the replay that armed it
	startMsg := one(t, expB, "B", "message workflow/obs.trip")
	timerMsg := one(t, expC, "C", "message workflow/obs.trip")
	if startMsg.Parent.SpanID() != start.SpanContext.SpanID() || startMsg.SpanContext.TraceID() != traceID {
		t.Fatal("the start message's delivery is not under the start span")
	}
	if timerMsg.Parent.SpanID() != replayB.SpanContext.SpanID() || timerMsg.SpanContext.TraceID() != traceID {
		t.Fatal("the timer's delivery on C is not under B's replay that armed it")
	}
	if replayC.Links[0].SpanContext.SpanID() != timerMsg.SpanContext.SpanID() {
		t.Fatal("C's replay does not link to the timer delivery")
	}
	for _, s := range append(append(expA.GetSpans(), expB.GetSpans()...), expC.GetSpans()...) {
		if strings.Contains(s.Name, "obs.trip") || strings.HasPrefix(s.Name, "step ") {
			if s.SpanContext.TraceID() != traceID {
				t.Errorf("span %q is in trace %s", s.Name, s.SpanContext.TraceID())
			}
		}
	}

	// voltro traces: the same run from the introspection tables
	d, _ := obstest.OpenStore(t, url)
	ws, in := store.Workflows(d), store.Introspection(d)
	obstest.WaitFor(t, 10*time.Second, "the introspection rows", func() bool {
		steps, _ := in.RunSteps(ctx, h.ID)
		events, _ := in.RunEvents(ctx, h.ID)
		return len(steps) == 3 && slices.ContainsFunc(events, func(e store.EventRecord) bool { return e.Kind == "completed" })
	})
	var out bytes.Buffer
	if err := cli.Traces(ctx, ws, in, h.ID, "text", &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Logf("voltro traces %s:\n%s", h.ID, text)
	for _, want := range []string{h.ID + "  obs.trip  COMPLETED", "trace:     " + traceID.String(), "replicas:  obs-b, obs-c",
		"step #0 one attempt 1 completed", "sleep #1 sleep", "step #2 two attempt 1 retrying: flaky once", "step #2 two attempt 2 completed",
		"started", "suspended", "resumed", "completed"} {
		if !strings.Contains(text, want) {
			t.Errorf("traces output lacks %q", want)
		}
	}
	lineOf := func(s string) string {
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, s) {
				return l
			}
		}
		return ""
	}
	if !strings.Contains(lineOf("step #0 one"), "obs-b") || !strings.Contains(lineOf("step #2 two attempt 2"), "obs-c") || !strings.Contains(lineOf("sleep #1"), "obs-c") {
		t.Errorf("steps are not shown with the replica that ran them")
	}
	out.Reset()
	if err := cli.Traces(ctx, ws, in, h.ID, "json", &out); err != nil {
		t.Fatal(err)
	}
	var tl cli.Timeline
	if err := json.Unmarshal(out.Bytes(), &tl); err != nil {
		t.Fatal(err)
	}
	if tl.TraceID != traceID.String() || !slices.Equal(tl.Replicas, []string{"obs-b", "obs-c"}) || tl.Status != "completed" {
		t.Fatalf("timeline: trace %s replicas %v status %s", tl.TraceID, tl.Replicas, tl.Status)
	}
	for i, it := range tl.Items {
		if i > 0 && it.At.Before(tl.Items[i-1].At) {
			t.Fatalf("timeline out of order at %d", i)
		}
		if it.Kind == "step" && it.TraceID != traceID.String() {
			t.Fatalf("step attempt %s recorded trace %q", it.Name, it.TraceID)
		}
	}
	if err := cli.Traces(ctx, ws, in, "wf_nope", "text", &out); err == nil {
		t.Fatal("an unknown execution printed a timeline")
	}
}

// A run started where nothing traces (the CLI, an app without a tracer)
// still has one trace: its replays derive it from the execution id.
func TestUntracedStartStillJoins(t *testing.T) {
	obstest.IsolateRegistry(t)
	ctx := obstest.Ctx(t)
	url := testdb.Postgres(t, "obs_traces_derived")
	tp, exp := provider(t)
	gate := voltro.NewWorkflow("obs.gate", func(wc *voltro.WorkflowContext, _ int) (string, error) {
		return voltro.AwaitSignal[string](wc, "open", 0)
	})
	starter := obstest.Start(t, url, obstest.App{Replica: "obs-s"})
	obstest.Start(t, url, obstest.App{Replica: "obs-x", Tracer: tp, Register: func(a *voltro.App) {
		if err := a.Register(gate); err != nil {
			t.Fatal(err)
		}
	}})
	h, err := gate.Start(ctx, starter, 0)
	if err != nil {
		t.Fatal(err)
	}
	obstest.WaitFor(t, 10*time.Second, "the run to wait", func() bool {
		s, err := starter.Get(ctx, h.ID)
		return err == nil && s.Status == "suspended"
	})
	if _, err := starter.Signal(ctx, h.ID, "open", "yes"); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Result(ctx); err != nil || got != "yes" {
		t.Fatalf("result %q, %v", got, err)
	}
	want := observe.ExecutionSpanContext(h.ID)
	obstest.WaitFor(t, 10*time.Second, "both replay spans", func() bool { return len(spansNamed(exp, "workflow obs.gate")) == 2 })
	replays := spansNamed(exp, "workflow obs.gate")
	for _, r := range replays {
		if r.SpanContext.TraceID() != want.TraceID() || r.Parent.SpanID() != want.SpanID() {
			t.Fatalf("replay in trace %s under %s, want %s under %s", r.SpanContext.TraceID(), r.Parent.SpanID(), want.TraceID(), want.SpanID())
		}
	}
	d, _ := obstest.OpenStore(t, url)
	var out bytes.Buffer
	if err := cli.Traces(ctx, store.Workflows(d), store.Introspection(d), h.ID, "text", &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "trace:     "+want.TraceID().String()+" (derived from the execution id") {
		t.Fatalf("traces output:\n%s", out.String())
	}
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

func TestLogsMergedAcrossInstances(t *testing.T) {
	obstest.IsolateRegistry(t)
	ctx := obstest.Ctx(t)
	url := testdb.Postgres(t, "obs_logs")
	obstest.Start(t, url, obstest.App{Replica: "obs-p"})
	q := obstest.Start(t, url, obstest.App{Replica: "obs-q"})
	for i := range 5 {
		q.Logger().Info("obs.test after boot", "i", i)
	}
	d, cfg := obstest.OpenStore(t, url)
	o := cli.LogsOptions{Store: d, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database}
	// a runner publishes its row, then its inspect address, from its loop
	obstest.WaitFor(t, 10*time.Second, "both runner rows with their inspect address", func() bool {
		rows, err := d.ListRunners(ctx)
		n := 0
		for _, r := range rows {
			if r.InspectAddr != "" {
				n++
			}
		}
		return err == nil && n == 2
	})

	var out, errb bytes.Buffer
	if err := cli.Logs(ctx, o, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var last time.Time
	for i, l := range lines {
		at, err := time.Parse("2006-01-02T15:04:05.000Z", strings.Fields(l)[0])
		if err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		if at.Before(last) {
			t.Fatalf("line %d goes back in time:\n%s", i, out.String())
		}
		last = at
	}
	for _, want := range []string{"obs-p workflow engine: cluster-sql, dialect=postgres", "obs-q workflow engine: cluster-sql, dialect=postgres",
		"obs-p sql dialect resolved: postgres — CDC:", "obs-q voltro started: replica=obs-q", "obs-p workflow runner: address=127.0.0.1:",
		"obs-q shard-lock coordination:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("merged logs lack %q", want)
		}
	}
	if errb.Len() > 0 {
		t.Errorf("stderr: %s", errb.String())
	}

	// one process, its last 3 records and nothing else
	out.Reset()
	o.Process, o.Tail, o.Format = "obs-q", 3, "json"
	if err := cli.Logs(ctx, o, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Fatalf("--tail 3 printed %d records:\n%s", n, out.String())
	}
	// and with --boot, the last 3 records after its boot lines, as JSON lines
	out.Reset()
	o.Boot = true
	if err := cli.Logs(ctx, o, &out, &errb); err != nil {
		t.Fatal(err)
	}
	boot, rest := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r observe.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r.Replica != "obs-q" {
			t.Fatalf("--process obs-q printed a record of %s", r.Replica)
		}
		if r.Boot {
			boot++
		} else {
			rest++
		}
	}
	if boot < 4 || rest != 3 {
		t.Fatalf("--tail 3: %d boot and %d other records", boot, rest)
	}
	o.Process, o.Boot = "obs-nobody", false
	if err := cli.Logs(ctx, o, &out, &errb); err == nil || !strings.Contains(err.Error(), "no running instance") {
		t.Fatalf("an unknown process: %v", err)
	}
}

func TestLogsFromTheLocalRegistry(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("VOLTRO_REGISTRY_DIR", dir)
	ctx := obstest.Ctx(t)
	file := filepath.Join(t.TempDir(), "obs.db")
	obstest.Start(t, "sqlite:"+file, obstest.App{Replica: "obs-local"})
	var out, errb bytes.Buffer
	// no DB_URL: every instance of the registry directory
	if err := cli.Logs(ctx, cli.LogsOptions{RegistryDir: dir, Level: "info"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "obs-local workflow engine: single-process, dialect=sqlite") || strings.Contains(out.String(), " DEBUG ") {
		t.Fatalf("registry logs:\n%s", out.String())
	}
}
