package workflow

// When a suspended run's timer is due: a sleep's end or a signal's timeout,
// read from the pending timer message its Sleep or AwaitSignal scheduled.

import (
	"context"
	"strconv"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// WakeAt is when the timer of run x's operation seq is due, by the store's
// clock; false when no timer of that operation is pending (a signal
// awaited without a timeout, a child, a timer already delivered).
func (w *Engine) WakeAt(ctx context.Context, x store.Execution, seq int) (time.Time, bool, error) {
	ms, err := w.e.Store().ListMessages(ctx, store.MessageFilter{State: store.StatePending, EntityType: EntityPrefix + x.Name, EntityID: x.ID})
	if err != nil {
		return time.Time{}, false, err
	}
	key := x.ID + ":timer:" + strconv.Itoa(seq)
	for _, m := range ms {
		if m.DedupeKey == key {
			return m.DeliverAt, true, nil
		}
	}
	return time.Time{}, false, nil
}
