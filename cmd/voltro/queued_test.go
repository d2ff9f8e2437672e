package main

// The queue commands against a running app on SQLite, as the other
// workflows tests run: start --queue, list --queue / --status queued, get
// of a queued run, queues list|show; and start --at / --after deferring a
// run on no queue.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
)

// queueApp runs an app on a SQLite file with workflow cli.job registered
// (each run sends its input on entered, then waits for release) and, when
// q is not nil, queue q. It returns the environment the CLI reads.
func queueApp(t *testing.T, ctx context.Context, q *voltro.Queue, entered chan<- string, release <-chan struct{}) func(string) string {
	t.Helper()
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	env := map[string]string{"DB_URL": "sqlite:" + filepath.Join(t.TempDir(), "queues.db"), "POD_NAME": "wf-queues",
		"VOLTRO_INSPECT_ADDR": "127.0.0.1:0", "VOLTRO_POLL_INTERVAL": "50ms"}
	getenv := func(k string) string { return env[k] }
	job := voltro.NewWorkflow("cli.job", func(wc *voltro.WorkflowContext, in string) (string, error) {
		return voltro.Step(wc, "work", func(ctx context.Context) (string, error) {
			select {
			case entered <- in:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			select {
			case <-release:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			return in, nil
		})
	})
	app, err := voltro.New(ctx, voltro.WithEnv(getenv), voltro.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close(context.Background()) })
	if err := app.Register(job); err != nil {
		t.Fatal(err)
	}
	if q != nil {
		if err := app.Register(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return getenv
}

// runCLI runs voltro args and returns its stdout, failing the test on an exit
// other than want.
func runCLI(t *testing.T, ctx context.Context, env func(string) string, want int, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(ctx, args, env, &out, &errb); code != want {
		t.Fatalf("voltro %s: exit %d, want %d:\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
	}
	if want != 0 {
		return errb.String()
	}
	return out.String()
}

func TestQueueCommandsOnSQLite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	entered, release := make(chan string, 8), make(chan struct{})
	q := voltro.NewQueue("cli.q", voltro.QueueOptions{Concurrency: 1, PartitionConcurrency: 1})
	env := queueApp(t, ctx, q, entered, release)
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	// the first run takes the queue's only slot and holds it
	first := strings.TrimSpace(runCLI(t, ctx, env, 0, "workflows", "start", "cli.job", "--input", `"first"`, "--queue", "cli.q", "--partition", "acme"))
	select {
	case got := <-entered:
		if got != "first" {
			t.Fatalf("%q entered, want first", got)
		}
	case <-ctx.Done():
		t.Fatal("the first run on the queue never started")
	}
	// the second waits for it; the third waits for its start time too
	second := strings.TrimSpace(runCLI(t, ctx, env, 0, "workflows", "start", "cli.job", "--input", `"second"`, "--queue", "cli.q", "--partition", "bolt", "--priority", "2"))
	third := strings.TrimSpace(runCLI(t, ctx, env, 0, "workflows", "start", "cli.job", "--input", `"third"`, "--queue", "cli.q", "--after", "1h"))

	out := runCLI(t, ctx, env, 0, "workflows", "get", second)
	for _, want := range []string{second + "  cli.job  QUEUED", "queue:      cli.q  partition bolt  priority 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("get of a queued run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "dequeued:") {
		t.Errorf("a queued run has no dequeue time:\n%s", out)
	}
	var v execView
	if err := json.Unmarshal([]byte(runCLI(t, ctx, env, 0, "workflows", "get", third, "--format", "json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Status != "queued" || v.Queue != "cli.q" || v.StartAt == nil || time.Until(*v.StartAt) < 50*time.Minute || v.DequeuedAt != nil {
		t.Errorf("get --format json of a deferred queued run: %+v", v)
	}

	out = runCLI(t, ctx, env, 0, "workflows", "list", "--queue", "cli.q", "--status", "queued")
	if !strings.Contains(out, second) || !strings.Contains(out, third) || strings.Contains(out, first) {
		t.Errorf("list --queue cli.q --status queued: want %s and %s, not %s:\n%s", second, third, first, out)
	}
	if out := runCLI(t, ctx, env, 0, "workflows", "list", "--queue", "other"); strings.Count(out, "\n") != 1 {
		t.Errorf("list --queue other lists runs:\n%s", out)
	}

	out = runCLI(t, ctx, env, 0, "queues", "list")
	// OLDEST, the last column, is how long the second run has waited so far
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if row := strings.Fields(lines[len(lines)-1]); len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME ") || len(row) != 9 ||
		strings.Join(row[:8], " ") != "cli.q 1 - 1 - 2 1 1" {
		t.Errorf("queues list:\n%s", out)
	}
	var qs []queueView
	if err := json.Unmarshal([]byte(runCLI(t, ctx, env, 0, "queues", "list", "--format", "json")), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Name != "cli.q" || qs[0].Concurrency != 1 || qs[0].Queued != 2 || qs[0].Due != 1 || qs[0].Active != 1 {
		t.Errorf("queues list --format json: %+v", qs)
	}
	out = runCLI(t, ctx, env, 0, "queues", "show", "cli.q")
	for _, want := range []string{"QUEUE cli.q", "1 fleet-wide, no limit per worker, 1 per partition", "queued:         2 (1 due", "active:         1", "acme", "bolt"} {
		if !strings.Contains(out, want) {
			t.Errorf("queues show lacks %q:\n%s", want, out)
		}
	}
	var one queueView
	if err := json.Unmarshal([]byte(runCLI(t, ctx, env, 0, "queues", "show", "cli.q", "--format", "json")), &one); err != nil || len(one.Partitions) != 3 {
		t.Errorf("queues show --format json: %+v, %v", one, err)
	}

	// an unknown queue: not found, and no start on it
	if err := runQueues(ctx, []string{"show", "nope"}, env, io.Discard, io.Discard); !errors.Is(err, voltro.ErrNotFound) || !strings.Contains(err.Error(), "stored: cli.q") {
		t.Errorf("queues show nope: %v", err)
	}
	if msg := runCLI(t, ctx, env, 1, "queues", "show", "nope"); !strings.Contains(msg, `queue "nope": no instance registered it`) {
		t.Errorf("queues show nope: %s", msg)
	}
	if msg := runCLI(t, ctx, env, 1, "workflows", "start", "cli.job", "--queue", "cli.qq"); !strings.Contains(msg, `no instance registered queue "cli.qq"`) ||
		!strings.Contains(msg, "stored queues: cli.q") {
		t.Errorf("start on an unknown queue: %s", msg)
	}
	if out := runCLI(t, ctx, env, 0, "workflows", "list", "--queue", "cli.qq"); strings.Count(out, "\n") != 1 {
		t.Errorf("the refused start queued a run:\n%s", out)
	}

	// the slot frees: the second run gets it, and says when
	released = true
	close(release)
	select {
	case got := <-entered:
		if got != "second" {
			t.Fatalf("%q entered, want second", got)
		}
	case <-ctx.Done():
		t.Fatal("the second run never got the slot")
	}
	for {
		if err := json.Unmarshal([]byte(runCLI(t, ctx, env, 0, "workflows", "get", second, "--format", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if v.Status == "completed" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the second run did not complete: %+v", v)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if v.DequeuedAt == nil || v.Queue != "cli.q" || v.Partition != "bolt" || v.Priority != 2 {
		t.Errorf("a dequeued run: %+v", v)
	}
	if out := runCLI(t, ctx, env, 0, "workflows", "get", second); !strings.Contains(out, "dequeued:   ") {
		t.Errorf("get of a dequeued run lacks its dequeue time:\n%s", out)
	}
}

// --after and --at defer a run on no queue: its code runs no earlier.
func TestWorkflowsStartDeferredOnSQLite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	entered, release := make(chan string, 4), make(chan struct{})
	close(release)
	env := queueApp(t, ctx, nil, entered, release)
	const wait = 2 * time.Second
	began := time.Now()
	runCLI(t, ctx, env, 0, "workflows", "start", "cli.job", "--input", `"after"`, "--after", wait.String())
	// RFC 3339 with a fraction: --at keeps it
	runCLI(t, ctx, env, 0, "workflows", "start", "cli.job", "--input", `"at"`, "--at", began.Add(wait).Format(time.RFC3339Nano))
	for range 2 {
		select {
		case got := <-entered:
			// less a store's millisecond rounding
			if d := time.Since(began); d < wait-10*time.Millisecond {
				t.Errorf("run %q started %s after the start, before its %s", got, d, wait)
			}
		case <-ctx.Done():
			t.Fatal("a deferred run never started")
		}
	}
}
