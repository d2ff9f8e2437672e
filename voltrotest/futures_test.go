package voltrotest_test

// Futures in virtual time: fan-out and fan-in of Go steps and children,
// Select between a signal and a timer (both outcomes), a Go step that
// finishes while its run suspends, and one the run never waits for.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/voltrotest"
)

// counter counts how often each named step ran, and the most steps that
// ran at once.
type counter struct {
	mu      sync.Mutex
	ran     map[string]int
	now     int
	maxSeen int
}

func newCounter() *counter { return &counter{ran: map[string]int{}} }

func (c *counter) enter(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ran[name]++
	c.now++
	c.maxSeen = max(c.maxSeen, c.now)
}

func (c *counter) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now--
}

func TestGoFanOutAndAll(t *testing.T) {
	t.Parallel()
	cnt := newCounter()
	var release = make(chan struct{})
	fan := voltro.NewWorkflow("futures.fan", func(wc *voltro.WorkflowContext, n int) (int, error) {
		fs := make([]*voltro.Future[int], n)
		for i := range fs {
			name := fmt.Sprintf("square-%d", i)
			fs[i] = voltro.Go(wc, name, func(ctx context.Context) (int, error) {
				cnt.enter(name)
				defer cnt.leave()
				<-release
				return i * i, nil
			})
		}
		vs, err := voltro.All(wc, fs...)
		if err != nil {
			return 0, err
		}
		sum := 0
		for i, v := range vs {
			if v != i*i {
				return 0, fmt.Errorf("result %d is %d: All lost the order", i, v)
			}
			sum += v
		}
		return sum, nil
	}, voltro.WithMaxParallel(4))
	env := voltrotest.New(t, fan)
	ctx := within(t)
	h, err := fan.Start(ctx, env.App(), 40)
	if err != nil {
		t.Fatal(err)
	}
	// four run at once, and no more, while they are held
	deadline := time.Now().Add(10 * time.Second)
	for {
		cnt.mu.Lock()
		now := cnt.now
		cnt.mu.Unlock()
		if now == 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	got, err := h.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range 40 {
		want += i * i
	}
	if got != want {
		t.Fatalf("sum %d, want %d", got, want)
	}
	if cnt.maxSeen != 4 {
		t.Fatalf("at most %d Go steps ran at once, want 4 (WithMaxParallel)", cnt.maxSeen)
	}
	for i := range 40 {
		if n := cnt.ran[fmt.Sprintf("square-%d", i)]; n != 1 {
			t.Fatalf("square-%d ran %d times", i, n)
		}
	}
}

func TestSelectSignalOrTimer(t *testing.T) {
	t.Parallel()
	approval := voltro.NewWorkflow("futures.approval", func(wc *voltro.WorkflowContext, _ string) (string, error) {
		sig := voltro.SignalFuture[bool](wc, "approve")
		timer := voltro.Timer(wc, 48*time.Hour)
		if voltro.Select(wc, sig, timer) == 1 {
			return "timed out", nil
		}
		ok, err := sig.Get(wc)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("approved=%v", ok), nil
	})
	env := voltrotest.New(t, approval)
	ctx := within(t)

	h, err := approval.Start(ctx, env.App(), "a")
	if err != nil {
		t.Fatal(err)
	}
	env.WaitFor(h.ID, voltrotest.Selecting())
	start := env.Now()
	env.Advance(time.Hour)
	if _, err := env.App().Signal(ctx, h.ID, "approve", true); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Result(ctx); err != nil || got != "approved=true" {
		t.Fatalf("signalled: %q %v", got, err)
	}

	h2, err := approval.Start(ctx, env.App(), "b")
	if err != nil {
		t.Fatal(err)
	}
	env.WaitFor(h2.ID, voltrotest.Selecting())
	if got, err := h2.Result(ctx); err != nil || got != "timed out" {
		t.Fatalf("not signalled: %q %v", got, err)
	}
	if took := env.Now().Sub(start); took < 48*time.Hour {
		t.Fatalf("the timer fired %s after the second start's window opened, want 48h or more", took)
	}
	// a signal after the timer won changes nothing: the select is journaled
	if _, err := env.App().Signal(ctx, h2.ID, "approve", true); err == nil {
		t.Fatal("a finished run took a signal")
	}
	for _, id := range []string{h.ID, h2.ID} {
		if err := env.CheckHistory(env.History(id)); err != nil {
			t.Fatalf("run %s does not replay: %v", id, err)
		}
	}
}

func TestSelectRacesGoSteps(t *testing.T) {
	t.Parallel()
	slowDone := make(chan struct{})
	var once sync.Once
	var slowRuns atomic.Int32
	race := voltro.NewWorkflow("futures.race", func(wc *voltro.WorkflowContext, _ int) (string, error) {
		slow := voltro.Go(wc, "slow", func(ctx context.Context) (string, error) {
			slowRuns.Add(1)
			select {
			case <-slowDone:
				return "slow", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		})
		fast := voltro.Go(wc, "fast", func(context.Context) (string, error) { return "fast", nil })
		i := voltro.Select(wc, slow, fast)
		if i != 1 || !fast.Done() {
			return "", fmt.Errorf("select returned %d (fast done: %v), want the fast step (1)", i, fast.Done())
		}
		won, err := fast.Get(wc)
		if err != nil {
			return "", err
		}
		// then wait a day: the slow step finishes while the run suspends,
		// and is journaled, not run again, when it resumes
		once.Do(func() { close(slowDone) }) // workflow code replays: once
		wc.Sleep(24 * time.Hour)
		lost, err := slow.Get(wc)
		return won + "," + lost, err
	})
	env := voltrotest.New(t, race)
	ctx := within(t)
	got, err := race.Run(ctx, env.App(), 0)
	if err != nil || got != "fast,slow" {
		t.Fatalf("race: %q %v", got, err)
	}
	if n := slowRuns.Load(); n != 1 {
		t.Fatalf("the slow step ran %d times, want 1", n)
	}
}

func TestFuturesOfChildren(t *testing.T) {
	t.Parallel()
	double := voltro.NewWorkflow("futures.double", func(wc *voltro.WorkflowContext, n int) (int, error) {
		wc.Sleep(time.Duration(n) * time.Minute)
		if n == 3 {
			return 0, errors.New("three is refused")
		}
		return 2 * n, nil
	})
	parent := voltro.NewWorkflow("futures.parent", func(wc *voltro.WorkflowContext, n int) ([]int, error) {
		var fs []*voltro.Future[int]
		for i := 1; i <= n; i++ {
			fs = append(fs, voltro.StartChild(wc, double, i))
		}
		return voltro.All(wc, fs...)
	})
	env := voltrotest.New(t, parent, double)
	ctx := within(t)
	start := env.Now()
	got, err := parent.Run(ctx, env.App(), 2)
	if err != nil || len(got) != 2 || got[0] != 2 || got[1] != 4 {
		t.Fatalf("children: %v %v", got, err)
	}
	if took := env.Now().Sub(start); took != 2*time.Minute {
		t.Fatalf("two children sleeping 1 and 2 minutes side by side took %s, want 2m", took)
	}
	// the first error in the order given ends All
	if _, err := parent.Run(ctx, env.App(), 4); err == nil || !strings.Contains(err.Error(), "three is refused") {
		t.Fatalf("a failing child: %v", err)
	}
}

func TestUnawaitedGoStepIsCancelled(t *testing.T) {
	t.Parallel()
	cancelled := make(chan error, 1)
	started := make(chan struct{})
	quick := voltro.NewWorkflow("futures.quick", func(wc *voltro.WorkflowContext, _ int) (string, error) {
		voltro.Go(wc, "forgotten", func(ctx context.Context) (int, error) {
			close(started)
			<-ctx.Done()
			cancelled <- ctx.Err()
			return 0, ctx.Err()
		})
		// the run ends once the forgotten step is surely running
		gate := voltro.Go(wc, "gate", func(context.Context) (int, error) { <-started; return 0, nil })
		_, err := gate.Get(wc)
		return "done", err
	})
	env := voltrotest.New(t, quick)
	ctx := within(t)
	if got, err := quick.Run(ctx, env.App(), 0); err != nil || got != "done" {
		t.Fatalf("run: %q %v", got, err)
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the unawaited step ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the unawaited Go step was not cancelled when its run ended")
	}
}
