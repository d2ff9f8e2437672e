// The `voltro schedules` command against SQLite and PostgreSQL.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/schedule"
	"github.com/voltro/voltro/internal/testdb"
)

func TestCLI(t *testing.T) {
	t.Parallel()
	// MariaDB is left out: the store contract covers it; the CLI is
	// dialect-blind.
	for _, sc := range []struct{ name, url string }{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "sched.db")},
		{"postgres", testdb.Postgres(t, "sched_cli")},
	} {
		t.Run(sc.name, func(t *testing.T) {
			st, err := schedule.OpenURL(context.Background(), sc.url, "")
			if err != nil {
				t.Fatalf("open %s: %v", sc.url, err)
			}
			t.Cleanup(func() { st.Close() })
			ctx := context.Background()
			if err := st.DefineSchedule(ctx, schedule.Definition{Name: "demo.tick", Spec: "@every 5s", TimeZone: "UTC", Coordination: schedule.AdvisoryLock, Overlap: schedule.OverlapSkip, ReplicaID: "pod-a"}); err != nil {
				t.Fatal(err)
			}
			at := time.Now().Truncate(5 * time.Second).UTC()
			for _, r := range []schedule.Run{
				{ScheduledAt: at.Add(-5 * time.Second), ReplicaID: "pod-a", Outcome: schedule.OutcomeWonLock, Status: schedule.StatusSucceeded},
				{ScheduledAt: at, ReplicaID: "pod-b", Outcome: schedule.OutcomeWonLock, Status: schedule.StatusFailed, Error: "upstream down\nstack"},
				{ScheduledAt: at, ReplicaID: "pod-a", Outcome: schedule.OutcomeLostLock, Status: schedule.StatusSkipped},
			} {
				r.Schedule = "demo.tick"
				id, err := st.InsertScheduleRun(ctx, schedule.Run{Schedule: r.Schedule, ScheduledAt: r.ScheduledAt, ReplicaID: r.ReplicaID, Outcome: r.Outcome, Status: schedule.StatusRunning})
				if err != nil {
					t.Fatal(err)
				}
				if err := st.FinishScheduleRun(ctx, id, r.Status, r.Error); err != nil {
					t.Fatal(err)
				}
			}
			env := func(k string) string {
				if k == "DB_URL" {
					return sc.url
				}
				return ""
			}
			run := func(args ...string) (string, error) {
				var out, errOut bytes.Buffer
				err := runSchedules(ctx, args, env, &out, &errOut)
				return out.String(), err
			}

			out, err := run("list")
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"NAME", "demo.tick", "@every 5s", "advisoryLock", "skip", "wonLock=2 lostLock=1", "failed", stamp(at)} {
				if !strings.Contains(out, want) {
					t.Errorf("list lacks %q:\n%s", want, out)
				}
			}
			t.Logf("list:\n%s", out)

			out, err = run("list", "--format", "json")
			if err != nil {
				t.Fatal(err)
			}
			var views []schedule.ScheduleView
			if err := json.Unmarshal([]byte(out), &views); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			v := views[0]
			if len(views) != 1 || v.Name != "demo.tick" || v.Counts[schedule.OutcomeWonLock] != 2 || v.LastRun == nil || v.LastRun.ReplicaID != "pod-b" ||
				!v.NextFireAt.After(time.Now()) || time.Until(v.NextFireAt) > 5*time.Second || v.NextFireAt.Unix()%5 != 0 || v.DefinedBy != "pod-a" {
				t.Fatalf("json view: %+v", v)
			}

			out, err = run("runs", "demo.tick")
			if err != nil {
				t.Fatal(err)
			}
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.Contains(lines[1], "pod-a") ||
				!strings.Contains(lines[1], "lostLock") || !strings.Contains(lines[2], "upstream down …") {
				t.Fatalf("runs table:\n%s", out)
			}
			t.Logf("runs:\n%s", out)

			out, err = run("runs", "demo.tick", "--format", "json", "--limit", "2")
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{`"replicaId": "pod-b"`, `"coordinationOutcome": "wonLock"`, `"scheduledAt"`, `"status": "failed"`} {
				if !strings.Contains(out, key) {
					t.Errorf("runs json lacks %s:\n%s", key, out)
				}
			}
			var runs []schedule.Run
			if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 2 {
				t.Fatalf("runs json: %v %d", err, len(runs))
			}

			if _, err := run("runs", "nope"); !errors.Is(err, errs.ErrNotFound) {
				t.Errorf("unknown schedule: %v", err)
			}
			for _, bad := range [][]string{{}, {"lsit"}, {"list", "--format", "xml"}, {"runs"}, {"runs", "a", "b"}, {"list", "extra"}, {"runs", "a", "--limit", "0"}} {
				if _, err := run(bad...); !errors.Is(err, errs.ErrInvalidArgument) {
					t.Errorf("%q: %v", bad, err)
				}
			}
		})
	}
	var out, errOut bytes.Buffer
	err := runSchedules(context.Background(), []string{"list"}, func(string) string { return "" }, &out, &errOut)
	if !errors.Is(err, errs.ErrInvalidConfig) || !strings.Contains(err.Error(), "memory") {
		t.Errorf("memory store: %v", err)
	}
}
