package voltrotest_test

// Virtual time as a test sees it: long sleeps, timeouts that wait for
// their caller, Advance, and retry backoff.

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/voltrotest"
)

// within bounds a test's wall time: far beyond what virtual time needs,
// far below what the real durations would take.
func within(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A workflow that sleeps a week returns at once, and the clock says a week
// went by.
func TestWeekLongSleepReturnsAtOnce(t *testing.T) {
	t.Parallel()
	week := voltro.NewWorkflow("week", func(wc *voltro.WorkflowContext, in int) (int, error) {
		wc.Sleep(7 * 24 * time.Hour)
		return in + 1, nil
	})
	env := voltrotest.New(t, week)
	began := env.Now()
	got, err := week.Run(within(t), env.App(), 41)
	if err != nil || got != 42 {
		t.Fatalf("Run = %d, %v; want 42, nil", got, err)
	}
	if slept := env.Now().Sub(began); slept < 7*24*time.Hour {
		t.Fatalf("the clock moved %s, want at least a week", slept)
	}
}

// Without anyone waiting, time stands still: a signal sent after looking
// at the run beats its hour-long timeout however long the test takes.
func TestTimeStandsStillUntilAwaited(t *testing.T) {
	t.Parallel()
	approve := voltro.NewWorkflow("approve", func(wc *voltro.WorkflowContext, _ struct{}) (string, error) {
		ok, err := voltro.AwaitSignal[bool](wc, "ok", time.Hour)
		if err != nil {
			return "timed out", nil
		}
		if !ok {
			return "refused", nil
		}
		return "approved", nil
	})
	env := voltrotest.New(t, approve)
	ctx := within(t)
	h, err := approve.Start(ctx, env.App(), struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitFor(h.ID, voltrotest.AwaitingSignal("ok"))
	if st.Status != "suspended" {
		t.Fatalf("status %q, want suspended", st.Status)
	}
	before := env.Now()
	if _, err := env.App().Signal(ctx, h.ID, "ok", true); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Result(ctx); err != nil || got != "approved" {
		t.Fatalf("Result = %q, %v; want approved", got, err)
	}
	if !env.Now().Equal(before) {
		t.Fatalf("the clock moved from %v to %v with nothing due", before, env.Now())
	}
	// Unsignalled, the timeout fires as soon as the result is awaited.
	h2, err := approve.Start(ctx, env.App(), struct{}{}, voltro.WithKey("second"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h2.Result(ctx); err != nil || got != "timed out" {
		t.Fatalf("Result = %q, %v; want timed out", got, err)
	}
	if moved := env.Now().Sub(before); moved != time.Hour {
		t.Fatalf("the clock moved %s, want exactly the hour of the timeout", moved)
	}
}

// Advance runs what falls due on the way and stops where it was told: the
// sleeps end 1h, 3h and 6h in.
func TestAdvanceFiresOnTheWayAndStops(t *testing.T) {
	t.Parallel()
	sleeps := voltro.NewWorkflow("sleeps", func(wc *voltro.WorkflowContext, _ struct{}) (int, error) {
		for _, d := range []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour} {
			wc.Sleep(d)
		}
		return 3, nil
	})
	env := voltrotest.New(t, sleeps)
	h, err := sleeps.Start(within(t), env.App(), struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	start := env.Now()
	env.Advance(90 * time.Minute) // past the first sleep only
	if got := env.Now().Sub(start); got != 90*time.Minute {
		t.Fatalf("the clock moved %s, want 90m", got)
	}
	st, err := env.App().Get(within(t), h.ID)
	if err != nil || !strings.HasPrefix(st.Waiting.String(), "sleep 2h0m0s") {
		t.Fatalf("after 90m waiting on %q (%v), want the second sleep", st.Waiting.String(), err)
	}
	env.Advance(5 * time.Hour) // to 6h30: past the other two
	if got := env.Now().Sub(start); got != 6*time.Hour+30*time.Minute {
		t.Fatalf("the clock moved %s, want 6h30m", got)
	}
	if st, _ := env.App().Get(within(t), h.ID); st.Status != "completed" {
		t.Fatalf("after 6h30 the run is %s, want completed", st.Status)
	}
}

// Retry backoff is skipped too: a step that fails twice with a 1-hour
// backoff succeeds at once, two hours later by the clock.
func TestRetryBackoffSkipsAhead(t *testing.T) {
	t.Parallel()
	var tries atomic.Int32
	flaky := voltro.NewWorkflow("flaky", func(wc *voltro.WorkflowContext, _ struct{}) (int32, error) {
		return voltro.Step(wc, "call", func(context.Context) (int32, error) {
			if n := tries.Add(1); n < 3 {
				return 0, errors.New("not yet")
			}
			return tries.Load(), nil
		}, voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 5, Backoff: func(int) time.Duration { return time.Hour }}))
	})
	env := voltrotest.New(t, flaky)
	before := env.Now()
	got, err := flaky.Run(within(t), env.App(), struct{}{})
	if err != nil || got != 3 {
		t.Fatalf("Run = %d, %v; want 3 tries", got, err)
	}
	if moved := env.Now().Sub(before); moved != 2*time.Hour {
		t.Fatalf("the clock moved %s, want the two 1-hour backoffs", moved)
	}
}

// An entity's retry backoff is skipped while its Request awaits the reply.
func TestEntityBackoffSkipsAheadForRequest(t *testing.T) {
	t.Parallel()
	var tries atomic.Int32
	stock := voltro.NewEntity("stock", func(_ context.Context, id string, n int) (int, error) {
		if tries.Add(1) < 3 {
			return 0, errors.New("warehouse busy")
		}
		return n, nil
	}, voltro.Backoff(func(int) time.Duration { return 30 * time.Minute }))
	env := voltrotest.New(t, stock)
	before := env.Now()
	got, err := stock.Request(within(t), env.App(), "sku-1", 5)
	if err != nil || got != 5 {
		t.Fatalf("Request = %d, %v; want 5 on the third try", got, err)
	}
	if moved := env.Now().Sub(before); moved != time.Hour {
		t.Fatalf("the clock moved %s, want the two 30-minute backoffs", moved)
	}
}

// A test may end with a step sleeping out its backoff on a clock that will
// not move again: the cleanup cancels it instead of waiting for ever.
func TestCleanupWithAStepInBackoff(t *testing.T) {
	t.Parallel()
	stuck := voltro.NewWorkflow("backoff", func(wc *voltro.WorkflowContext, _ struct{}) (int, error) {
		return voltro.Step(wc, "fail", func(context.Context) (int, error) { return 0, errors.New("no") },
			voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 5, Backoff: func(int) time.Duration { return time.Hour }}))
	})
	msg := fatalOf(func(ft testing.TB) {
		env := voltrotest.New(ft, stuck)
		if _, err := stuck.Start(ft.Context(), env.App(), struct{}{}); err != nil {
			ft.Fatal(err)
		}
		env.Advance(0) // quiet: the step sleeps in its first backoff
	})
	if msg != "" {
		t.Fatal(msg)
	}
}
