package voltro_test

// A user's sentinel errors keep their identity through a step, a child run,
// an entity reply and a restart that replays the journal in another
// process: errors.Is works in the workflow code and on the run's result.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
)

var (
	errOutOfStock = errors.New("out of stock")                                        // plain
	errDeclined   = voltro.NewError(voltro.Code("payment_declined"), "card declined") // coded
)

// orderFlows: a step fails with errOutOfStock; after a signal (the restart
// falls here) the code branches on errors.Is of the journaled error, then a
// child fails with errDeclined wrapped, and the run fails with both.
func orderFlows() (*voltro.Workflow[int, string], *voltro.Workflow[int, int]) {
	charge := voltro.NewWorkflow("t.err.charge", func(wc *voltro.WorkflowContext, n int) (int, error) {
		return voltro.Step(wc, "charge", func(context.Context) (int, error) {
			return 0, fmt.Errorf("card %d: %w", n, errDeclined)
		}, voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 1}))
	})
	order := voltro.NewWorkflow("t.err.order", func(wc *voltro.WorkflowContext, n int) (string, error) {
		_, err := voltro.Step(wc, "reserve", func(context.Context) (int, error) { return 0, errOutOfStock },
			voltro.NonRetryable(errOutOfStock))
		if _, serr := voltro.AwaitSignal[string](wc, "go", 0); serr != nil {
			return "", serr
		}
		if !errors.Is(err, errOutOfStock) {
			return "the step's error lost its identity: " + err.Error(), nil
		}
		_, cerr := voltro.ExecuteChild(wc, charge, n)
		if !errors.Is(cerr, errDeclined) {
			return "the child's error lost its identity: " + cerr.Error(), nil
		}
		return "", fmt.Errorf("order %d: %w", n, errors.Join(err, cerr))
	})
	return order, charge
}

// appAt is a started app on url with items registered; the caller closes
// it.
func appAt(t *testing.T, url string, items ...voltro.Registrable) *voltro.App {
	t.Helper()
	env := map[string]string{"DB_URL": url, "POD_NAME": "test"}
	app, err := voltro.New(context.Background(), voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(items...); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return app
}

func checkOrderError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("the run succeeded; want it to fail with both errors")
	}
	var ve *voltro.Error
	if !errors.Is(err, errOutOfStock) || !errors.Is(err, errDeclined) || !errors.As(err, &ve) {
		t.Fatalf("the run's error %q: errors.Is(out of stock) %v, errors.Is(declined) %v", err, errors.Is(err, errOutOfStock), errors.Is(err, errDeclined))
	}
}

func TestSentinelErrorsSurviveStepsAndChildren(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	order, charge := orderFlows()
	app := memApp(t, order, charge)
	h, err := order.Start(ctx, app, 7)
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, app, h.ID, func(s voltro.WorkflowStatus) bool { return s.Status == voltro.StatusSuspended })
	if _, err := app.SignalWorkflow(ctx, h.ID, "go", "now"); err != nil {
		t.Fatal(err)
	}
	out, err := h.Result(ctx)
	if out != "" {
		t.Fatal(out)
	}
	checkOrderError(t, err)
}

// An entity's reply error keeps its identity the same way.
func TestSentinelErrorsSurviveAnEntityReply(t *testing.T) {
	stock := voltro.NewEntity("t.err.stock", func(ctx context.Context, sku string, qty int) (int, error) {
		return 0, voltro.Permanent(fmt.Errorf("sku %s: %w", sku, errOutOfStock))
	})
	app := memApp(t, stock)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := stock.Request(ctx, app, "lamp", 2)
	if !errors.Is(err, errOutOfStock) || !strings.Contains(err.Error(), "sku lamp") {
		t.Fatalf("reply error %v: want one matching errOutOfStock, with its detail", err)
	}
}

// errsRoleEnv makes TestSentinelErrorsSurviveAnotherProcess, run again by
// itself in a child process, resume the run there.
const errsRoleEnv = "VOLTRO_TEST_ERRS_RESUME"

// The run is started and suspended here, then resumed and finished in
// another process on the same SQLite file: the step's error is replayed
// from the journal there, and errors.Is holds in its code and on its result.
func TestSentinelErrorsSurviveAnotherProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if spec := os.Getenv(errsRoleEnv); spec != "" {
		url, id, _ := strings.Cut(spec, "|")
		order, charge := orderFlows()
		app := appAt(t, url, order, charge)
		defer app.Close(context.Background())
		if _, err := app.SignalWorkflow(ctx, id, "go", "now"); err != nil {
			t.Fatal(err)
		}
		out, err := voltro.GetHandle[string](app, id).Result(ctx)
		if out != "" {
			t.Fatal(out)
		}
		checkOrderError(t, err)
		fmt.Println("RESUMED", id)
		return
	}
	url := "sqlite:" + filepath.Join(t.TempDir(), "errs.db")
	order, charge := orderFlows()
	first := appAt(t, url, order, charge)
	h, err := order.Start(ctx, first, 9)
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, first, h.ID, func(s voltro.WorkflowStatus) bool { return s.Status == voltro.StatusSuspended })
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSentinelErrorsSurviveAnotherProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), errsRoleEnv+"="+url+"|"+h.ID)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "RESUMED "+h.ID) {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
}
