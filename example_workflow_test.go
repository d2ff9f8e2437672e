package voltro_test

// Runnable examples of durable workflows on the memory store: steps and
// retries, durable sleep, signals, child runs, errors that keep their
// identity, and a run's status. go test runs them and checks their output.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/voltro/voltro"
)

// startApp starts an app on the memory store with items registered. The
// examples ignore the process environment, so that what they print does
// not depend on it; an app of yours would leave WithEnv out.
func startApp(ctx context.Context, items ...voltro.Registrable) *voltro.App {
	app, err := voltro.New(ctx,
		voltro.WithConfig(voltro.Config{DatabaseURL: "memory:", ReplicaID: "example"}),
		voltro.WithEnv(func(string) string { return "" }),
		voltro.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	if err := app.Register(items...); err != nil {
		panic(err)
	}
	if err := app.Start(ctx); err != nil {
		panic(err)
	}
	return app
}

// A workflow is a typed function of its input. Each Step is journaled: if
// the process dies after "price", the run resumes on a surviving instance
// and goes on with "charge", without pricing again.
func ExampleNewWorkflow() {
	ctx := context.Background()
	type order struct {
		ID  int
		Qty int
	}
	checkout := voltro.NewWorkflow("example.checkout", func(wc *voltro.WorkflowContext, o order) (string, error) {
		price, err := voltro.Step(wc, "price", func(ctx context.Context) (int, error) {
			return 7 * o.Qty, nil // an API call, a query: any I/O goes in a step
		})
		if err != nil {
			return "", err
		}
		return voltro.Step(wc, "charge", func(ctx context.Context) (string, error) {
			return fmt.Sprintf("order %d charged %d", o.ID, price), nil
		})
	})
	app := startApp(ctx, checkout)
	defer app.Close(ctx)

	receipt, err := checkout.Run(ctx, app, order{ID: 1, Qty: 3})
	fmt.Println(receipt, err)
	// Output: order 1 charged 21 <nil>
}

// A failing step is retried in place with backoff; an error it cannot
// recover from fails it at once.
func ExampleStep() {
	ctx := context.Background()
	errCardExpired := errors.New("card expired")
	attempts := 0
	pay := voltro.NewWorkflow("example.pay", func(wc *voltro.WorkflowContext, card string) (string, error) {
		return voltro.Step(wc, "charge", func(ctx context.Context) (string, error) {
			attempts++
			switch {
			case card == "expired":
				return "", errCardExpired
			case attempts < 3:
				return "", errors.New("gateway timeout") // retried
			}
			return "paid after " + fmt.Sprint(attempts) + " attempts", nil
		},
			voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 5, Backoff: func(int) time.Duration { return time.Millisecond }}),
			voltro.NonRetryable(errCardExpired))
	})
	app := startApp(ctx, pay)
	defer app.Close(ctx)

	fmt.Println(pay.Run(ctx, app, "visa"))
	attempts = 0
	_, err := pay.Run(ctx, app, "expired")
	fmt.Println(errors.Is(err, errCardExpired), attempts)
	// Output:
	// paid after 3 attempts <nil>
	// true 1
}

// Sleep suspends the run durably: no goroutine waits, and a restart or a
// failover does not shorten or lose it.
func ExampleWorkflowContext_Sleep() {
	ctx := context.Background()
	remind := voltro.NewWorkflow("example.remind", func(wc *voltro.WorkflowContext, d time.Duration) (string, error) {
		wc.Sleep(d) // a week works too: the timer is a row in the database
		return "reminder sent", nil
	})
	app := startApp(ctx, remind)
	defer app.Close(ctx)

	start := time.Now()
	out, err := remind.Run(ctx, app, 20*time.Millisecond)
	fmt.Println(out, err, time.Since(start) >= 20*time.Millisecond)
	// Output: reminder sent <nil> true
}

// A run waits for a named signal, here one sent right after the start; a
// timeout gives up with an error matching ErrDeadline.
func ExampleAwaitSignal() {
	ctx := context.Background()
	type approval struct{ By string }
	expense := voltro.NewWorkflow("example.expense", func(wc *voltro.WorkflowContext, amount int) (string, error) {
		a, err := voltro.AwaitSignal[approval](wc, "approve", 24*time.Hour)
		if errors.Is(err, voltro.ErrDeadline) {
			return "expired", nil
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d approved by %s", amount, a.By), nil
	})
	app := startApp(ctx, expense)
	defer app.Close(ctx)

	h, err := expense.Start(ctx, app, 120)
	if err != nil {
		panic(err)
	}
	if _, err := app.Signal(ctx, h.ID, "approve", approval{By: "ann"}); err != nil {
		panic(err)
	}
	fmt.Println(h.Result(ctx))
	// Output: 120 approved by ann <nil>
}

// A child run is started once and awaited without holding a goroutine; if
// the parent finishes first, the child follows its parent-close policy.
func ExampleExecuteChild() {
	ctx := context.Background()
	ship := voltro.NewWorkflow("example.ship", func(wc *voltro.WorkflowContext, item string) (string, error) {
		si, err := wc.StartInfo()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s shipped (started by %s, %s)", item, si.Source, si.ParentClose), nil
	})
	order := voltro.NewWorkflow("example.order", func(wc *voltro.WorkflowContext, item string) (string, error) {
		return voltro.ExecuteChild(wc, ship, item, voltro.ParentClose(voltro.ParentCloseAbandon))
	})
	app := startApp(ctx, ship, order)
	defer app.Close(ctx)

	fmt.Println(order.Run(ctx, app, "lamp"))
	// Output: lamp shipped (started by child, abandon) <nil>
}

// Errors keep their identity across steps, children and restarts:
// errors.Is works in the workflow code and on the run's result, for a plain
// sentinel (matched by its text) and a coded one (by its code and message).
func ExampleNewError() {
	ctx := context.Background()
	errOutOfStock := errors.New("out of stock")
	errDeclined := voltro.NewError("payment_declined", "card declined")
	buy := voltro.NewWorkflow("example.buy", func(wc *voltro.WorkflowContext, sku string) (string, error) {
		_, err := voltro.Step(wc, "reserve", func(ctx context.Context) (int, error) {
			return 0, errOutOfStock
		}, voltro.NonRetryable(errOutOfStock))
		if errors.Is(err, errOutOfStock) { // also on a replay in another process
			return "", fmt.Errorf("sku %s: %w", sku, errDeclined)
		}
		return "bought", err
	})
	app := startApp(ctx, buy)
	defer app.Close(ctx)

	_, err := buy.Run(ctx, app, "lamp-1")
	var ve *voltro.Error
	fmt.Println(errors.Is(err, errDeclined), errors.As(err, &ve), ve.Code)
	// Output: true true payment_declined
}

// A run's status, as the CLI and dashboards show it.
func ExampleApp_Get() {
	ctx := context.Background()
	hello := voltro.NewWorkflow("example.hello", func(wc *voltro.WorkflowContext, name string) (string, error) {
		return "hello " + name, nil
	})
	app := startApp(ctx, hello)
	defer app.Close(ctx)

	h, err := hello.Start(ctx, app, "ann", voltro.WithKey("greeting-ann"))
	if err != nil {
		panic(err)
	}
	if _, err := h.Result(ctx); err != nil {
		panic(err)
	}
	st, err := app.Get(ctx, h.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(st.ID == voltro.ExecutionID("example.hello", "greeting-ann"), st.Status, st.Status.Terminal(), string(st.Output))
	// Output: true completed true "hello ann"
}
