package voltrotest_test

// Schedules on the virtual clock.

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/voltrotest"
)

// Cron ticks fire on the virtual clock, each at its own instant.
func TestScheduleFiresOnVirtualTime(t *testing.T) {
	t.Parallel()
	var fired atomic.Int32
	var last atomic.Int64
	hourly := voltro.NewSchedule("hourly", "@every 1h", func(_ context.Context, at time.Time) error {
		fired.Add(1)
		last.Store(at.Unix())
		return nil
	})
	env := voltrotest.New(t, hourly)
	env.Advance(3*time.Hour + 30*time.Minute)
	if n := fired.Load(); n != 3 {
		t.Fatalf("fired %d times in 3h30, want 3", n)
	}
	if at := time.Unix(last.Load(), 0).UTC(); !at.Equal(env.Now().Add(-30 * time.Minute)) {
		t.Fatalf("the last tick was scheduled at %v, want %v", at, env.Now().Add(-30*time.Minute))
	}
}
