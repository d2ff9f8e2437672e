package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/store"
)

// voltro gc counts (--dry-run) and deletes what the retention no longer
// keeps, per kind and table, with the retention of its flags.
func TestGCCountsThenDeletes(t *testing.T) {
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "gc.db")
	// the app itself keeps everything: only voltro gc deletes here
	env := map[string]string{"DB_URL": url, "POD_NAME": "gc", "VOLTRO_INSPECT_ADDR": "127.0.0.1:0", "VOLTRO_RETENTION": "0"}
	getenv := func(k string) string { return env[k] }
	wf := voltro.NewWorkflow("cli.gc", func(wc *voltro.WorkflowContext, in int) (int, error) {
		for _, s := range []string{"a", "b", "c"} {
			var err error
			if in, err = voltro.Step(wc, s, func(context.Context) (int, error) { return in + 1, nil }); err != nil {
				return 0, err
			}
		}
		return in, nil
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
	for i := range 3 {
		h, err := wf.Start(ctx, app, i)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Result(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Close(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // older than the 1 s retention below

	gc := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(ctx, append([]string{"gc"}, args...), getenv, &out, &errb); code != 0 {
			t.Fatalf("voltro gc %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	rows := func(out, kind, table string) string {
		m := regexp.MustCompile(`(?m)^` + kind + `\s+\S+\s+` + table + `\s+(\d+)$`).FindStringSubmatch(out)
		if m == nil {
			return "0"
		}
		return m[1]
	}
	out := gc("--dry-run", "--retention", "1s")
	if !strings.Contains(out, "finished runs and processed messages 1s, dead letters 30d") || !strings.Contains(out, "would delete") {
		t.Fatalf("dry run:\n%s", out)
	}
	for table, want := range map[string]string{store.TableExecutions: "3", store.TableJournal: "9", store.TableStartContexts: "3", store.TableMessages: "3"} {
		if got := rows(out, "finished runs", table); got != want {
			t.Fatalf("dry run: %s of finished runs = %s, want %s:\n%s", table, got, want, out)
		}
	}
	if got := rows(gc("--dry-run", "--retention", "1s"), "finished runs", store.TableExecutions); got != "3" {
		t.Fatalf("a dry run deleted something: %s left", got)
	}
	out = gc("--retention", "1s")
	if rows(out, "finished runs", store.TableExecutions) != "3" || !strings.Contains(out, "\ndeleted ") {
		t.Fatalf("gc:\n%s", out)
	}
	var res struct {
		Retention struct {
			Runs string `json:"runs"`
		} `json:"retention"`
		DryRun bool `json:"dryRun"`
		Kinds  []struct {
			Kind string           `json:"kind"`
			Rows map[string]int64 `json:"rows"`
		} `json:"kinds"`
	}
	if err := json.Unmarshal([]byte(gc("--dry-run", "--retention", "1s", "--format", "json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Retention.Runs != "1s" || !res.DryRun || len(res.Kinds) != 4 {
		t.Fatalf("json: %+v", res)
	}
	for _, k := range res.Kinds {
		if len(k.Rows) != 0 {
			t.Fatalf("after gc nothing is left to delete: %+v", res)
		}
	}
	// 0 keeps everything: only the silent runners' rows still have an age
	out = gc("--retention", "0", "--dead-letter-retention", "0")
	if regexp.MustCompile(`(?m)^(finished runs|processed messages|dead letters)\s`).MatchString(out) || !strings.Contains(out, "processed messages forever, dead letters forever") {
		t.Fatalf("retention 0 must keep runs, messages and dead letters:\n%s", out)
	}
}
