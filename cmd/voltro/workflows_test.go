package main

// voltro workflows list names the runner executing a running run. The
// executions row learns its runner only when a replay ends (suspends or
// finishes), so a run on its first replay showed an empty RUNNER.

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/golden"
)

func TestWorkflowsListNamesTheRunnerOfARunningRun(t *testing.T) {
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "list.db")
	env := map[string]string{"DB_URL": url, "POD_NAME": "wf-list", "VOLTRO_INSPECT_ADDR": "127.0.0.1:0"}
	getenv := func(k string) string { return env[k] }
	entered, release := make(chan struct{}), make(chan struct{})
	block := voltro.NewWorkflow("cli.block", func(wc *voltro.WorkflowContext, in int) (int, error) {
		return voltro.Step(wc, "wait", func(ctx context.Context) (int, error) {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return in, nil
		})
	})
	app, err := voltro.New(ctx, voltro.WithEnv(getenv), voltro.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(block); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer app.Close(context.Background())
	defer close(release)
	if _, err := block.Start(ctx, app, 7); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the run never reached its step")
	}
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"workflows", "list"}, getenv, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := regexp.MustCompile(`wf_[0-9a-f]{26}`).ReplaceAllString(out.String(), "wf_XXXXXXXXXXXXXXXXXXXXXXXXXX")
	// CREATED is the last column: its width moves nothing
	got = regexp.MustCompile(`\d{4}-\d\d-\d\dT\S+`).ReplaceAllString(got, "<created>")
	golden.Check(t, "workflows_list_running.golden", []byte(got))
}
