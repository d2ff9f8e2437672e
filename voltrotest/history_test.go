package voltrotest_test

// The replay check against the recorded order histories, and against
// changed versions of the order workflow.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/voltrotest"
)

const histories = "testdata/histories"

// The recorded order histories (finished, refunded, and one in flight on
// its shipment signal) replay against today's code.
func TestOrderHistoriesReplay(t *testing.T) {
	t.Parallel()
	hs, err := voltrotest.ReadHistories(histories)
	if err != nil || len(hs) < 5 {
		t.Fatalf("read %d histories (%v), want the 3 orders and their payments", len(hs), err)
	}
	voltrotest.Replay(t, histories, order, payment)
}

// changedOrder is the order workflow after a deploy: the same name, with
// the body edit applied at its place.
func changedOrder(edit string) *voltro.Workflow[Order, Receipt] {
	return voltro.NewWorkflow("order", func(wc *voltro.WorkflowContext, o Order) (Receipt, error) {
		r := Receipt{Order: o.ID}
		reserve := "reserve"
		if edit == "rename" {
			reserve = "reserve-stock"
		}
		if _, err := voltro.Step(wc, reserve, func(context.Context) (bool, error) { return true, nil }); err != nil {
			return r, err
		}
		if edit == "insert" {
			if _, err := voltro.Step(wc, "fraud-check", func(context.Context) (bool, error) { return true, nil }); err != nil {
				return r, err
			}
		}
		charge, err := voltro.ExecuteChild(wc, payment, o)
		if err != nil {
			return r, err
		}
		r.Charge = charge
		shipped := "shipped"
		if edit == "rename-signal" {
			shipped = "dispatched"
		}
		if _, err := voltro.AwaitSignal[string](wc, shipped, 3*24*time.Hour); err != nil {
			r.Outcome, err = voltro.Step(wc, "refund", func(context.Context) (string, error) { return "refunded", nil })
			return r, err
		}
		if edit != "drop-sleep" {
			wc.Sleep(7 * 24 * time.Hour)
		}
		r.Outcome, err = voltro.Step(wc, "close", func(context.Context) (string, error) { return "delivered: " + edit, nil })
		if err == nil && edit == "append" {
			_, err = voltro.Step(wc, "survey", func(context.Context) (bool, error) { return true, nil })
		}
		return r, err
	})
}

// A deploy that renames, inserts or drops an operation fails the replay of
// the runs it would break, with the divergence error; one that changes a
// step's body or adds operations past where every run got does not. A
// renamed signal breaks the run suspended on it too, though its journal
// holds nothing there yet (its waitingOn says what it waits on).
func TestReplayCatchesBreakingChanges(t *testing.T) {
	t.Parallel()
	hs, err := voltrotest.ReadHistories(histories)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit     string
		breaking int // order histories it breaks
	}{
		{"rename", 3}, {"insert", 3}, {"drop-sleep", 1}, {"body", 0}, {"append", 0}, {"rename-signal", 3},
	} {
		t.Run(c.edit, func(t *testing.T) {
			t.Parallel()
			env := voltrotest.New(t, changedOrder(c.edit), payment)
			broken := 0
			for _, h := range hs {
				err := env.CheckHistory(h)
				switch {
				case err == nil:
				case errors.Is(err, voltro.ErrNonDeterminism) && h.Workflow == "order":
					broken++
				default:
					t.Errorf("%s %s: %v", h.Workflow, h.ID, err)
				}
			}
			if broken != c.breaking {
				t.Errorf("%d order histories diverge, want %d", broken, c.breaking)
			}
		})
	}
}
