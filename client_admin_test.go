package voltro_test

// What a client tells an operator's tool: RequireHost refuses a start
// nobody would run, WithSource is recorded, CancelRun says what it did,
// and Journal gives a run's steps with their tries.

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testwait"
)

type adminIn struct {
	N int `json:"n"`
}

var adminFlow = voltro.NewWorkflow("client.admin", func(wc *voltro.WorkflowContext, in adminIn) (string, error) {
	si, err := wc.StartInfo()
	if err != nil {
		return "", err
	}
	tries := 0
	v, err := voltro.Step(wc, "double", func(context.Context) (int, error) {
		if tries++; tries == 1 {
			return 0, errors.New("flaky")
		}
		return in.N * 2, nil
	}, voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 2, Backoff: func(int) time.Duration { return time.Millisecond }}))
	if err != nil {
		return "", err
	}
	return string(si.Source) + " " + strings.Repeat("x", v), nil
})

func testClientAdmin(t *testing.T, db txDB) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var logs bytes.Buffer
	c := newClient(t, db.url, &logs)
	txApp(t, db.url, "1h", adminFlow)

	_, err := c.Start(ctx, "client.admn", adminIn{N: 1}, voltro.RequireHost())
	if !errors.Is(err, voltro.ErrUnregistered) || !strings.Contains(err.Error(), "client.admin") {
		t.Fatalf("RequireHost of a workflow nobody hosts: %v; want unregistered, naming the hosted client.admin", err)
	}
	if _, err := c.Start(ctx, "client.admin", map[string]string{"n": "two"}, voltro.RequireHost()); !errors.Is(err, voltro.ErrInvalidArgument) {
		t.Fatalf("RequireHost of an input that does not fit the published schema: %v", err)
	}
	typo, err := c.Start(ctx, "client.admn", adminIn{N: 1}) // without RequireHost: stored, waits
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.CancelRun(ctx, typo); err != nil || !out.Finished {
		t.Fatalf("CancelRun of a run nobody hosts: %+v, %v; want it finished at once", out, err)
	}

	id, err := c.Start(ctx, "client.admin", adminIn{N: 2}, voltro.RequireHost(), voltro.WithSource(voltro.SourceCLI))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.Await(ctx, id); err != nil || string(out) != `"cli xxxx"` {
		t.Fatalf("the run started WithSource(SourceCLI): %s, %v", out, err)
	}
	if out, err := c.CancelRun(ctx, id); err != nil || out.Finished || out.Requested || out.Status != voltro.StatusCompleted {
		t.Fatalf("CancelRun of a completed run: %+v, %v", out, err)
	}
	var journal []voltro.JournalEntry
	// The tries are written after the run, by the instance's introspection
	// writer.
	testwait.For(t, 30*time.Second, "the journal with the step's two tries", func() bool {
		journal, err = c.Journal(ctx, id)
		return err == nil && len(journal) == 1 && len(journal[0].Tries) == 2
	})
	step := journal[0]
	if step.Kind != voltro.JournalStep || step.Name != "double" || string(step.Result) != "4" || step.Attempts != 2 || step.Error != nil {
		t.Fatalf("journal entry: %+v", step)
	}
	if len(step.Tries) != 2 || step.Tries[0].Error == "" || step.Tries[0].Status != voltro.TryRetrying || step.Tries[1].Status != voltro.TryCompleted || step.Tries[1].Runner == "" {
		t.Fatalf("the step's tries: %+v; want a failed one, then a completed one", step.Tries)
	}
}

func TestClientAdminPostgres(t *testing.T) { testClientAdmin(t, txPostgres(t, "clientadm")) }
func TestClientAdminMariaDB(t *testing.T)  { testClientAdmin(t, txMariaDB(t, "clientadm")) }
