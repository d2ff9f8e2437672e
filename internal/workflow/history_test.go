package workflow_test

// _voltro_workflow_run_steps is the execution history: every attempt of
// every step has a row, a first-try success included, on the SQL stores.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/observe/obstest"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
)

func TestEveryStepAttemptRecordedPostgres(t *testing.T) {
	everyStepAttemptRecorded(t, testdb.Postgres(t, "wf_history"))
}

func TestEveryStepAttemptRecordedMariaDB(t *testing.T) {
	everyStepAttemptRecorded(t, testdb.MariaDB(t, "wf_history"))
}

func everyStepAttemptRecorded(t *testing.T, url string) {
	obstest.IsolateRegistry(t)
	var flaky atomic.Int64
	wf := voltro.NewWorkflow("history.two", func(wc *voltro.WorkflowContext, n int) (int, error) {
		v, err := voltro.Step(wc, "first-try", func(context.Context) (int, error) { return n + 1, nil })
		if err != nil {
			return 0, err
		}
		return voltro.Step(wc, "flaky", func(context.Context) (int, error) {
			if flaky.Add(1) == 1 {
				return 0, errors.New("flaky once")
			}
			return v + 1, nil
		}, voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 3, Backoff: func(int) time.Duration { return 5 * time.Millisecond }}))
	})
	app := obstest.Start(t, url, obstest.App{Replica: "history-a", Register: func(a *voltro.App) {
		if err := a.Register(wf); err != nil {
			t.Fatal(err)
		}
	}})
	ctx := obstest.Ctx(t)
	h, err := wf.Start(ctx, app, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.Result(ctx); err != nil || v != 3 {
		t.Fatalf("result %d, %v", v, err)
	}
	d, _ := obstest.OpenStore(t, url)
	in := store.Introspection(d)
	want := "0/first-try/1/completed 1/flaky/1/retrying 1/flaky/2/completed"
	var got string
	deadline := time.Now().Add(10 * time.Second)
	for {
		steps, err := in.RunSteps(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, s := range steps {
			parts = append(parts, fmt.Sprintf("%d/%s/%d/%s", s.Seq, s.Name, s.Attempt, s.Status))
			if s.Status == "completed" && (s.ReplicaID != "history-a" || s.Runner == "" || s.StartedAt.IsZero() || s.FinishedAt.Before(s.StartedAt)) {
				t.Fatalf("attempt row without its runner, replica or times: %+v", s)
			}
		}
		if got = strings.Join(parts, " "); got == want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got != want {
		t.Fatalf("step attempts of %s:\n got %s\nwant %s", h.ID, got, want)
	}
}
