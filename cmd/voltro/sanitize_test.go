package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
)

// A run whose workflow, step and error carry terminal escape sequences
// (written by the app, or by anyone who can write the tables) prints them
// escaped in voltro workflows list and get: nothing reaches the terminal
// that could retitle it, clear it or hide text.
func TestWorkflowsOutputEscapesTerminalSequences(t *testing.T) {
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := map[string]string{"DB_URL": "sqlite:" + filepath.Join(t.TempDir(), "esc.db"), "POD_NAME": "esc", "VOLTRO_INSPECT_ADDR": "127.0.0.1:0"}
	getenv := func(k string) string { return env[k] }
	const evil = "\x1b]0;pwned\x07\x1b[2J\u202eevil\r"
	wf := voltro.NewWorkflow("cli.esc"+evil, func(wc *voltro.WorkflowContext, in string) (string, error) {
		return voltro.Step(wc, "step"+evil, func(ctx context.Context) (string, error) {
			return "", voltro.Permanent(errors.New("failed" + evil))
		})
	})
	app, err := voltro.New(ctx, voltro.WithEnv(getenv), voltro.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(wf); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer app.Close(context.Background())
	h, err := wf.Start(ctx, app, "in"+evil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Result(ctx); err == nil {
		t.Fatal("the run did not fail")
	}
	for _, args := range [][]string{{"workflows", "list"}, {"workflows", "get", h.ID}} {
		var out, errb bytes.Buffer
		if code := run(ctx, args, getenv, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		if strings.ContainsAny(out.String(), "\x1b\x07\r\u202e") {
			t.Fatalf("%v printed a control character:\n%q", args, out.String())
		}
		if !strings.Contains(out.String(), `cli.esc\x1b]0;pwned\a\x1b[2J\u202eevil\r`) {
			t.Fatalf("%v does not show the name escaped:\n%s", args, out.String())
		}
	}
}
