// The suite's controllable clock, passed to every store it opens.

package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// Clock is real time plus an offset that Advance moves forward: a test
// jumps past a lease, claim or delivery time instead of sleeping it out,
// while statements that only need time to pass (an ordering, a later
// stamp) still see it pass.
type Clock struct {
	mu  sync.Mutex
	off time.Duration
}

// Now is the clock's time; pass it as the store's clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// open returns a fresh store from factory on a clock of its own.
func open(t *testing.T, factory Factory) (store.Driver, *Clock) {
	t.Helper()
	c := &Clock{}
	return factory(t, c.Now), c
}

// fresh is open without the clock, for cases that never move time.
func fresh(t *testing.T, factory Factory) store.Driver {
	t.Helper()
	d, _ := open(t, factory)
	return d
}

// second returns another handle on d's database on the same clock (d
// itself where the store has no second handle, as memory).
func second(t *testing.T, opts Options, d store.Driver, c *Clock) store.Driver {
	t.Helper()
	if opts.Reopen == nil {
		return d
	}
	return opts.Reopen(t, d, c.Now)
}
