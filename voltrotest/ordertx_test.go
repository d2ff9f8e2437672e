package voltrotest_test

// Issue 14's user-level test, first half: the order service of
// internal/e2e/testdata/orders (its row and its run written in one
// transaction) through its whole timeline on a virtual clock, on a SQLite
// file (NewSQLite). internal/e2e/orders_test.go runs the same code as two
// processes on PostgreSQL through a rolling deploy.

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/voltro/voltro"
	_ "github.com/voltro/voltro/driver/sqlite"
	"github.com/voltro/voltro/internal/e2e/testdata/orders"
	"github.com/voltro/voltro/voltrotest"
)

func TestOrderServiceInATransaction(t *testing.T) {
	t.Parallel()
	began := time.Now()
	env := voltrotest.NewSQLite(t, orders.Workflows()...)
	ctx := within(t)
	db, dialect, err := env.App().DB()
	if err != nil {
		t.Fatal(err)
	}
	if err := orders.CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	start, ready := env.Now(), time.Now()
	h, err := orders.Place(ctx, env.App(), db, dialect, orders.Order{ID: "o-1", Amount: 4200})
	if err != nil {
		t.Fatal(err)
	}
	wantRows := []orders.Row{{ID: "o-1", Amount: 4200, RunID: h.ID}}
	if rows, err := orders.Rows(ctx, db); err != nil || !reflect.DeepEqual(rows, wantRows) {
		t.Fatalf("rows after the commit: %+v (%v), want %+v", rows, err, wantRows)
	}
	env.WaitFor(h.ID, voltrotest.AwaitingSignal(orders.Signal))
	if at := env.Now().Sub(start); at != 24*time.Hour {
		t.Fatalf("the order awaits its shipment %s in, want 24h (once the payment settled)", at)
	}
	if _, err := env.App().Signal(ctx, h.ID, orders.Signal, "tracking-1"); err != nil {
		t.Fatal(err)
	}
	got, err := h.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := orders.Receipt{Order: "o-1", Charge: "captured:auth-o-1-4200", Outcome: "delivered", ClosedBy: orders.Version}
	if got != want {
		t.Fatalf("receipt %+v, want %+v", got, want)
	}
	virtual, wall := env.Now().Sub(start), time.Since(began)
	if virtual < 7*24*time.Hour {
		t.Fatalf("the timeline took %s of virtual time, want at least the 7-day return window", virtual)
	}
	t.Logf("a %s order timeline (row and run in one transaction, child, signal, sleeps) in %s of wall time (%s of it starting the Env)",
		virtual, wall.Round(time.Millisecond), ready.Sub(began).Round(time.Millisecond))
	if wall > virtual/10_000 { // about a minute: far above any run, far below a clock that does not skip
		t.Errorf("%s of wall time for %s of virtual time: the clock did not skip", wall, virtual)
	}

	// A row the table refuses rolls back the run started before it in the
	// same transaction; a repeated order id leaves the first as it was.
	if _, err := orders.Place(ctx, env.App(), db, dialect, orders.Order{ID: "o-2", Amount: 0}); err == nil {
		t.Fatal("an order of amount 0 was placed; the table's check must refuse it")
	}
	if _, err := env.App().Get(ctx, voltro.ExecutionID(orders.Flow.Name(), "o-2")); !errors.Is(err, voltro.ErrNotFound) {
		t.Fatalf("the run of a rolled-back order: %v, want ErrNotFound", err)
	}
	if _, err := orders.Place(ctx, env.App(), db, dialect, orders.Order{ID: "o-1", Amount: 1}); err == nil {
		t.Fatal("order o-1 was placed twice")
	}
	if rows, err := orders.Rows(ctx, db); err != nil || !reflect.DeepEqual(rows, wantRows) {
		t.Fatalf("rows after two rolled-back orders: %+v (%v), want %+v", rows, err, wantRows)
	}
	if st, err := env.App().Get(ctx, h.ID); err != nil || st.Status != voltro.StatusCompleted {
		t.Fatalf("o-1's run after its id was ordered again: %+v, %v", st, err)
	}
}
