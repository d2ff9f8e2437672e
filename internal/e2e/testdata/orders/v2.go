//go:build v2

package orders

import (
	"context"

	"github.com/voltro/voltro"
)

// Version is the deploy this package is built as.
const Version = "v2"

// screen, v2: a fraud screen before the payment, behind voltro.Patched.
// A run that passed this point under v1 (its journal has the payment
// next) keeps v1's branch on every replay; a new run screens.
func screen(wc *voltro.WorkflowContext, o Order) (bool, error) {
	if !voltro.Patched(wc, "fraud-screen") {
		return false, nil
	}
	_, err := voltro.Step(wc, "screen", func(context.Context) (bool, error) { return o.Amount < 1_000_000, nil })
	return true, err
}
