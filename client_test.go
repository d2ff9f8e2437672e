package voltro_test

// NewClient end to end: a client starts a workflow no instance hosts yet
// (durable: it runs when one comes up), starts by typed handle, signals,
// cancels, reads, lists and awaits — and never joins the ring.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

type greetIn struct {
	Name string `json:"name"`
}

var clientGreet = voltro.NewWorkflow("client.greet", func(wc *voltro.WorkflowContext, in greetIn) (string, error) {
	return "hello " + in.Name, nil
})

var clientWait = voltro.NewWorkflow("client.wait", func(wc *voltro.WorkflowContext, in greetIn) (string, error) {
	ok, err := voltro.AwaitSignal[bool](wc, "go", 0)
	if err != nil {
		return "", err
	}
	if !ok {
		return "no " + in.Name, nil
	}
	return "go " + in.Name, nil
})

func newClient(t *testing.T, url string, log *bytes.Buffer) *voltro.Client {
	t.Helper()
	env := map[string]string{"DB_URL": url, "VOLTRO_CLUSTER_SECRET": "s"}
	c, err := voltro.NewClient(context.Background(), voltro.WithEnv(func(k string) string { return env[k] }),
		voltro.WithLogger(slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testClient(t *testing.T, db txDB) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var logs bytes.Buffer
	c := newClient(t, db.url, &logs)
	// Nothing hosts client.greet yet: the start is stored all the same.
	early, err := c.Start(ctx, "client.greet", greetIn{Name: "early"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.Get(ctx, early); err != nil || st.Status != voltro.StatusRunning || st.Name != "client.greet" {
		t.Fatalf("a start nobody hosts yet: %+v, %v", st, err)
	}
	pool := db.pool(t)
	var runners, owned int
	if err := pool.QueryRowContext(ctx, "SELECT COUNT(*) FROM voltro_runners").Scan(&runners); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRowContext(ctx, "SELECT COUNT(*) FROM voltro_shard_locks WHERE owner <> ''").Scan(&owned); err != nil {
		t.Fatal(err)
	}
	if runners != 0 || owned != 0 {
		t.Fatalf("a client must register no runner (%d) and hold no shard (%d)", runners, owned)
	}
	if s := logs.String(); strings.Contains(s, "runner") || strings.Contains(s, "shard") {
		t.Fatalf("a client must log no boot lines about a runner or shards:\n%s", s)
	}
	// An instance that hosts it comes up (the poll at an hour: the backlog
	// read at its shards' acquisition runs the early start, the client's
	// wake-ups the later ones).
	txApp(t, db.url, "1h", clientGreet, clientWait)
	if out, err := c.Await(ctx, early); err != nil || string(out) != `"hello early"` {
		t.Fatalf("the early run: %s, %v", out, err)
	}
	h, err := clientGreet.Start(ctx, c, greetIn{Name: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Result(ctx); err != nil || out != "hello typed" {
		t.Fatalf("a typed start from the client: %q, %v", out, err)
	}
	w, err := clientWait.Start(ctx, c, greetIn{Name: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := clientWait.Start(ctx, c, greetIn{Name: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	var st voltro.WorkflowStatus
	testwait.For(t, 30*time.Second, "the run suspended on its signal", func() bool {
		st, err = c.Get(ctx, w.ID)
		return err == nil && st.Status == voltro.StatusSuspended
	})
	if st.Waiting == nil || st.Waiting.Kind != voltro.WaitSignal || st.Waiting.Name != "go" || !st.Waiting.Until.IsZero() {
		t.Fatalf("Get of a run awaiting signal go without a timeout: Waiting %+v (WaitingOn %q)", st.Waiting, st.WaitingOn)
	}
	if list, err := c.List(ctx, voltro.ListFilter{Status: voltro.StatusSuspended, Name: "client.wait"}); err != nil || len(list) == 0 || list[0].Waiting == nil || list[0].Waiting.Kind != voltro.WaitSignal {
		t.Fatalf("List of runs awaiting a signal: %+v, %v", list, err)
	}
	if ok, err := c.Signal(ctx, w.ID, "go", true); err != nil || !ok {
		t.Fatalf("signal: %v, %v", ok, err)
	}
	if out, err := w.Result(ctx); err != nil || out != "go ann" {
		t.Fatalf("the signalled run: %q, %v", out, err)
	}
	if err := c.Cancel(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Result(ctx); !errors.Is(err, voltro.ErrCancelled) {
		t.Fatalf("the cancelled run: %v", err)
	}
	list, err := c.List(ctx, voltro.ListFilter{Name: "client.wait"})
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	done, err := c.List(ctx, voltro.ListFilter{Status: voltro.StatusCompleted})
	if err != nil || len(done) != 3 {
		t.Fatalf("list completed: %d runs, %v; want 3", len(done), err)
	}
	if _, err := c.List(ctx, voltro.ListFilter{Status: "bogus"}); !errors.Is(err, voltro.ErrInvalidArgument) {
		t.Fatalf("list with a bogus status: %v", err)
	}
}

func TestClientPostgres(t *testing.T) { testClient(t, txPostgres(t, "client")) }
func TestClientMariaDB(t *testing.T)  { testClient(t, txMariaDB(t, "client")) }

// TestClientTakesConfig: a Config passed to NewClient is laid over the
// environment as it is for New, so a web tier configured by struct reaches
// the cluster's database, not the environment's memory default.
func TestClientTakesConfig(t *testing.T) {
	url := testdb.Postgres(t, "clientcfg")
	env := map[string]string{"DB_URL": "memory:", "VOLTRO_CLUSTER_SECRET": "s"}
	c, err := voltro.NewClient(context.Background(), voltro.WithEnv(func(k string) string { return env[k] }),
		voltro.WithConfig(voltro.Config{DatabaseURL: url}))
	if err != nil {
		t.Fatalf("NewClient with a Config naming PostgreSQL over a memory environment: %v", err)
	}
	defer c.Close()
	if _, err := c.Start(context.Background(), clientGreet.Name(), greetIn{Name: "cfg"}); err != nil {
		t.Fatalf("start through the configured client: %v", err)
	}
}

func TestClientRefusesMemory(t *testing.T) {
	if _, err := voltro.NewClient(context.Background(), voltro.WithDB("memory:")); !errors.Is(err, voltro.ErrInvalidArgument) {
		t.Fatalf("a client on the memory store: %v", err)
	}
}
