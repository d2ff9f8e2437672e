package voltrotest_test

// The order service of issue 14, tested as its author would: a child
// payment that settles a day later, a shipment signal with a 3-day
// timeout, a 7-day return window, all in well under a second of wall time.
// go test ./voltrotest -run TestOrderService -record rewrites the recorded
// histories that TestOrderHistoriesReplay checks.

import (
	"context"
	"errors"
	"flag"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/voltrotest"
)

var record = flag.Bool("record", false, "record the order service's workflow histories into testdata/histories")

type Order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

type Receipt struct {
	Order   string `json:"order"`
	Charge  string `json:"charge"`
	Outcome string `json:"outcome"` // delivered, refunded
}

var payment = voltro.NewWorkflow("payment", func(wc *voltro.WorkflowContext, o Order) (string, error) {
	auth, err := voltro.Step(wc, "authorize", func(context.Context) (string, error) { return "auth-" + o.ID, nil })
	if err != nil {
		return "", err
	}
	wc.Sleep(24 * time.Hour) // the card network settles the next day
	return voltro.Step(wc, "capture", func(context.Context) (string, error) { return "captured:" + auth, nil })
})

var order = voltro.NewWorkflow("order", func(wc *voltro.WorkflowContext, o Order) (Receipt, error) {
	r := Receipt{Order: o.ID}
	if _, err := voltro.Step(wc, "reserve", func(context.Context) (bool, error) { return true, nil }); err != nil {
		return r, err
	}
	charge, err := voltro.ExecuteChild(wc, payment, o)
	if err != nil {
		return r, err
	}
	r.Charge = charge
	if _, err := voltro.AwaitSignal[string](wc, "shipped", 3*24*time.Hour); err != nil {
		if !errors.Is(err, voltro.ErrDeadline) {
			return r, err
		}
		r.Outcome, err = voltro.Step(wc, "refund", func(context.Context) (string, error) { return "refunded", nil })
		return r, err
	}
	wc.Sleep(7 * 24 * time.Hour) // the return window
	r.Outcome, err = voltro.Step(wc, "close", func(context.Context) (string, error) { return "delivered", nil })
	return r, err
})

func TestOrderService(t *testing.T) {
	t.Parallel()
	began := time.Now()
	env := voltrotest.New(t, order, payment)
	ctx := within(t)
	start := env.Now()
	h, err := order.Start(ctx, env.App(), Order{ID: "o-17", Amount: 4200}, voltro.WithKey("o-17"))
	if err != nil {
		t.Fatal(err)
	}
	env.WaitFor(h.ID, voltrotest.AwaitingChild())
	env.WaitFor(h.ID, voltrotest.AwaitingSignal("shipped"))
	if at := env.Now().Sub(start); at != 24*time.Hour {
		t.Fatalf("the order awaits its shipment %s in, want 24h (after the payment settled)", at)
	}
	if _, err := env.App().Signal(ctx, h.ID, "shipped", "tracking-1"); err != nil {
		t.Fatal(err)
	}
	got, err := h.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Receipt{Order: "o-17", Charge: "captured:auth-o-17", Outcome: "delivered"}
	if got != want {
		t.Fatalf("receipt %+v, want %+v", got, want)
	}
	took, wall := env.Now().Sub(start), time.Since(began)
	if took != 8*24*time.Hour {
		t.Fatalf("the timeline took %s of virtual time, want 8 days (1 to settle, 7 to return)", took)
	}
	t.Logf("an 8-day order timeline in %s of wall time", wall.Round(time.Millisecond))
	if wall > took/10_000 { // about a minute: far above any run, far below a clock that does not skip
		t.Errorf("%s of wall time for %s of virtual time: the clock did not skip", wall, took)
	}

	// Never shipped: refunded when the 3-day timeout fires.
	h2, err := order.Start(ctx, env.App(), Order{ID: "o-18", Amount: 100}, voltro.WithKey("o-18"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h2.Result(ctx); err != nil || got.Outcome != "refunded" {
		t.Fatalf("unshipped order: %+v, %v; want refunded", got, err)
	}
	// Shipped never yet: in flight, suspended on the signal, as a deploy
	// would find it.
	h3, err := order.Start(ctx, env.App(), Order{ID: "o-19", Amount: 7}, voltro.WithKey("o-19"))
	if err != nil {
		t.Fatal(err)
	}
	env.WaitFor(h3.ID, voltrotest.AwaitingSignal("shipped"))
	if *record {
		for _, p := range env.SaveHistories("testdata/histories") {
			t.Logf("recorded %s", p)
		}
	}
}
