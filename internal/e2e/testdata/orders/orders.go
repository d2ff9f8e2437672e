// Package orders is the order service of issue 14's user-level test, in
// one place for both halves of it: voltrotest/ordertx_test.go runs it on a
// virtual clock, internal/e2e/orders_test.go runs ./service (this package
// behind HTTP) as real processes on PostgreSQL and deploys v2 (-tags v2)
// over v1 while orders are in flight.
//
// An order is a row in the service's own table and a run of workflow
// "orders.order", written in one transaction (Place). The run reserves
// stock, has a child run ("orders.payment") authorise the card and capture
// a day later, waits up to 3 days for a "shipped" signal (refunding when
// it does not come), then waits out a 7-day return window and closes the
// order. Order.Day sets how long a day lasts, so real processes can live
// through the timeline in seconds; it travels in the run's input, so a run
// keeps its timeline on whichever version resumes it.
package orders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/voltro/voltro"
)

// Order is what a customer places, and the input of its run.
type Order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"` // cents; the table refuses 0 or less
	// Day is how long one day of the timeline lasts; 0 is 24h.
	Day time.Duration `json:"day,omitempty"`
}

// day is the length of one day of o's timeline.
func (o Order) day() time.Duration {
	if o.Day > 0 {
		return o.Day
	}
	return 24 * time.Hour
}

// Receipt is the outcome of an order's run.
type Receipt struct {
	Order    string `json:"order"`
	Charge   string `json:"charge"`
	Screened bool   `json:"screened"` // v2's fraud screen ran (behind voltro.Patched)
	Outcome  string `json:"outcome"`  // delivered or refunded
	ClosedBy string `json:"closedBy"` // the Version whose code ran the last step
}

// Signal is the name of the signal that says an order has shipped.
const Signal = "shipped"

// Payment authorises the order's amount, and captures it when the card
// network settles, a day later.
var Payment = voltro.NewWorkflow("orders.payment", func(wc *voltro.WorkflowContext, o Order) (string, error) {
	auth, err := voltro.Step(wc, "authorize", func(context.Context) (string, error) {
		return fmt.Sprintf("auth-%s-%d", o.ID, o.Amount), nil
	})
	if err != nil {
		return "", err
	}
	wc.Sleep(o.day())
	return voltro.Step(wc, "capture", func(context.Context) (string, error) { return "captured:" + auth, nil })
})

// Flow is the order's run.
var Flow = voltro.NewWorkflow("orders.order", func(wc *voltro.WorkflowContext, o Order) (Receipt, error) {
	r := Receipt{Order: o.ID}
	if _, err := voltro.Step(wc, "reserve", func(context.Context) (bool, error) { return true, nil }); err != nil {
		return r, err
	}
	var err error
	if r.Screened, err = screen(wc, o); err != nil {
		return r, err
	}
	if r.Charge, err = voltro.ExecuteChild(wc, Payment, o); err != nil {
		return r, err
	}
	closeAs := func(outcome string) (Receipt, error) {
		var err error
		r.ClosedBy, err = voltro.Step(wc, outcome, func(context.Context) (string, error) { return Version, nil })
		r.Outcome = outcome
		return r, err
	}
	if _, err := voltro.AwaitSignal[string](wc, Signal, 3*o.day()); err != nil {
		if !errors.Is(err, voltro.ErrDeadline) {
			return r, err
		}
		return closeAs("refunded")
	}
	wc.Sleep(7 * o.day()) // the return window
	return closeAs("delivered")
})

// Workflows are what a process serving orders registers.
func Workflows() []voltro.Registrable { return []voltro.Registrable{Flow, Payment} }

// Placeholders of the dialects the table lives on: App.DB's dialect name.
func args(dialect string) (string, error) {
	switch dialect {
	case "postgres":
		return "($1, $2, $3)", nil
	case "sqlite", "mariadb", "mysql":
		return "(?, ?, ?)", nil
	}
	return "", fmt.Errorf("orders: no table on the %q store", dialect)
}

// CreateTable creates the service's table if it is not there. An amount
// must be positive: a row that is not rolls its transaction back.
func CreateTable(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orders (
		id VARCHAR(64) PRIMARY KEY,
		amount INTEGER NOT NULL CHECK (amount > 0),
		run_id VARCHAR(64) NOT NULL)`)
	if err != nil {
		return fmt.Errorf("orders: create the table: %w", err)
	}
	return nil
}

// Place writes o's row and starts its run in one transaction on db (the
// database of runs, of the given App.DB dialect): both exist once it
// returns without error, neither when it fails. A repeated order id fails
// on the row's key and leaves the first order as it was.
func Place(ctx context.Context, runs voltro.Runs, db *sql.DB, dialect string, o Order) (*voltro.Handle[Receipt], error) {
	values, err := args(dialect)
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("orders: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	h, err := Flow.StartTx(ctx, runs, tx, o, voltro.WithKey(o.ID))
	if err != nil {
		return nil, fmt.Errorf("orders: start the run of %s: %w", o.ID, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, amount, run_id) VALUES `+values, o.ID, o.Amount, h.ID); err != nil {
		return nil, fmt.Errorf("orders: write %s: %w", o.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("orders: commit %s: %w", o.ID, err)
	}
	return h, nil
}

// Row is one order as the table holds it.
type Row struct {
	ID     string
	Amount int
	RunID  string
}

// Rows lists the table, by id.
func Rows(ctx context.Context, db *sql.DB) ([]Row, error) {
	rs, err := db.QueryContext(ctx, `SELECT id, amount, run_id FROM orders ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("orders: list: %w", err)
	}
	defer rs.Close()
	var out []Row
	for rs.Next() {
		var r Row
		if err := rs.Scan(&r.ID, &r.Amount, &r.RunID); err != nil {
			return nil, fmt.Errorf("orders: list: %w", err)
		}
		out = append(out, r)
	}
	return out, rs.Err()
}
