package voltro_test

// Runnable examples of what a deploy does to runs in flight: a change
// behind Patched (and the later deploy that deprecates it), and a failed
// or cancelled run put back to work. go test runs them and checks their
// output.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/voltro/voltro"
)

// chargeVersion is workflow "example.charge" as deployed at version v:
// charge the order, wait for "ship", report. v2 adds tax behind Patched;
// v3 deletes the old branch and deprecates the patch.
func chargeVersion(v string) *voltro.Workflow[int, string] {
	return voltro.NewWorkflow("example.charge", func(wc *voltro.WorkflowContext, amount int) (string, error) {
		charge := func(name string, total int) (int, error) {
			return voltro.Step(wc, name, func(context.Context) (int, error) { return total, nil })
		}
		var total int
		var err error
		switch v {
		case "v1":
			total, err = charge("charge", amount)
		case "v2":
			if voltro.Patched(wc, "tax") {
				total, err = charge("charge-with-tax", amount*120/100)
			} else {
				total, err = charge("charge", amount)
			}
		case "v3":
			voltro.DeprecatePatch(wc, "tax")
			total, err = charge("charge-with-tax", amount*120/100)
		}
		if err != nil {
			return "", err
		}
		if _, err := voltro.AwaitSignal[bool](wc, "ship", 0); err != nil {
			return "", err
		}
		return fmt.Sprintf("charged %d (%s code)", total, v), nil
	})
}

// deployCharge starts the app at version v on url, and starts a run keyed
// key that charges, then waits for "ship".
func deployCharge(ctx context.Context, url, v, key string) (*voltro.App, string) {
	flow := chargeVersion(v)
	app := startAppOn(ctx, url, flow)
	h, err := flow.Start(ctx, app, 100, voltro.WithKey(key))
	if err != nil {
		panic(err)
	}
	awaitSuspended(ctx, app, h.ID)
	return app, h.ID
}

// ship signals run id and prints its result.
func ship(ctx context.Context, app *voltro.App, id string) {
	if _, err := app.Signal(ctx, id, "ship", true); err != nil {
		panic(err)
	}
	fmt.Println(voltro.GetHandle[string](app, id).Result(ctx))
}

// A deploy changes how an order is charged while runs are in flight. The
// run that charged under v1 keeps the old branch when v2 replays it; a run
// that reaches the change on v2 takes the new one.
func ExamplePatched() {
	ctx := context.Background()
	url, remove := exampleDB()
	defer remove()
	v1, old := deployCharge(ctx, url, "v1", "old") // charged under v1, waiting for "ship"
	if err := v1.Close(ctx); err != nil {
		panic(err)
	}

	v2, fresh := deployCharge(ctx, url, "v2", "fresh") // the rolling deploy: v2 replaces v1
	defer v2.Close(ctx)
	ship(ctx, v2, old)
	ship(ctx, v2, fresh)
	// Output:
	// charged 100 (v2 code) <nil>
	// charged 120 (v2 code) <nil>
}

// Once no run that took the old branch is left, a deploy deletes it and
// calls DeprecatePatch where Patched stood: a run that recorded the patch
// on v2 replays on v3, and new runs record nothing.
func ExampleDeprecatePatch() {
	ctx := context.Background()
	url, remove := exampleDB()
	defer remove()
	v2, mid := deployCharge(ctx, url, "v2", "mid") // took the patch on v2
	if err := v2.Close(ctx); err != nil {
		panic(err)
	}

	v3, fresh := deployCharge(ctx, url, "v3", "fresh")
	defer v3.Close(ctx)
	ship(ctx, v3, mid)
	ship(ctx, v3, fresh)
	// Output:
	// charged 120 (v3 code) <nil>
	// charged 120 (v3 code) <nil>
}

// A run that failed on a step is retried from that step, once the cause is
// fixed: the steps before it keep their journaled results and do not run
// again.
func ExampleApp_Retry() {
	ctx := context.Background()
	var reserved atomic.Int32
	var gatewayDown atomic.Bool
	gatewayDown.Store(true)
	errGatewayDown := errors.New("payment gateway down")
	order := voltro.NewWorkflow("example.retry", func(wc *voltro.WorkflowContext, n int) (string, error) {
		if _, err := voltro.Step(wc, "reserve", func(context.Context) (int32, error) { return reserved.Add(1), nil }); err != nil {
			return "", err
		}
		return voltro.Step(wc, "charge", func(context.Context) (string, error) {
			if gatewayDown.Load() {
				return "", errGatewayDown
			}
			return fmt.Sprintf("order %d charged", n), nil
		}, voltro.NonRetryable(errGatewayDown))
	})
	app := startApp(ctx, order)
	defer app.Close(ctx)

	h, err := order.Start(ctx, app, 17)
	if err != nil {
		panic(err)
	}
	_, err = h.Result(ctx)
	fmt.Println(errors.Is(err, errGatewayDown))

	gatewayDown.Store(false) // the fix
	if err := app.Retry(ctx, h.ID); err != nil {
		panic(err)
	}
	fmt.Println(h.Result(ctx))
	fmt.Println("reserve ran", reserved.Load(), "time(s)")
	// Output:
	// true
	// order 17 charged <nil>
	// reserve ran 1 time(s)
}

// A cancelled run (or one that failed when a deploy diverged from its
// journal, once the fix is deployed) is resumed with its whole journal: it
// goes on from where it stopped.
func ExampleApp_Resume() {
	ctx := context.Background()
	var reserved atomic.Int32
	order := voltro.NewWorkflow("example.resume", func(wc *voltro.WorkflowContext, n int) (string, error) {
		if _, err := voltro.Step(wc, "reserve", func(context.Context) (int32, error) { return reserved.Add(1), nil }); err != nil {
			return "", err
		}
		if _, err := voltro.AwaitSignal[bool](wc, "pay", 0); err != nil {
			return "", err
		}
		return fmt.Sprintf("order %d paid", n), nil
	})
	app := startApp(ctx, order)
	defer app.Close(ctx)

	h, err := order.Start(ctx, app, 17)
	if err != nil {
		panic(err)
	}
	awaitSuspended(ctx, app, h.ID) // reserved, waiting for "pay"
	if err := app.Cancel(ctx, h.ID); err != nil {
		panic(err)
	}
	_, err = h.Result(ctx)
	fmt.Println(errors.Is(err, voltro.ErrCancelled))

	if err := app.Resume(ctx, h.ID); err != nil { // cancelled by mistake
		panic(err)
	}
	if _, err := app.Signal(ctx, h.ID, "pay", true); err != nil {
		panic(err)
	}
	fmt.Println(h.Result(ctx))
	fmt.Println("reserve ran", reserved.Load(), "time(s)")
	// Output:
	// true
	// order 17 paid <nil>
	// reserve ran 1 time(s)
}
