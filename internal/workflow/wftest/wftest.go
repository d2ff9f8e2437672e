package wftest

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
)

// NewApp returns a started app on a fresh database, with the given
// workflows registered before Start.
type NewApp func(t *testing.T, register func(*voltro.App)) *voltro.App

// Run runs the suite.
func Run(t *testing.T, newApp NewApp) {
	t.Run("StepsJournaledOnce", func(t *testing.T) { testSteps(t, newApp) })
	t.Run("StepRetries", func(t *testing.T) { testRetries(t, newApp) })
	t.Run("ErrorsSurviveSerialization", func(t *testing.T) { testErrors(t, newApp) })
	t.Run("DurableSleep", func(t *testing.T) { testSleep(t, newApp) })
	t.Run("Signals", func(t *testing.T) { testSignals(t, newApp) })
	t.Run("Children", func(t *testing.T) { testChildren(t, newApp) })
	t.Run("CancelWithChildren", func(t *testing.T) { testCancel(t, newApp) })
	t.Run("DivergentReplay", func(t *testing.T) { testDivergence(t, newApp) })
	t.Run("StartContext", func(t *testing.T) { testStartContext(t, newApp) })
	t.Run("ConcurrentStartsWithRepeats", func(t *testing.T) { testConcurrentStarts(t, newApp) })
}

// testConcurrentStarts: many starts at once, a third of them repeating a
// key started before, so batched starts meet runs that exist (a store may
// refuse such a batch as a whole; the engine then starts them one by one).
// Every new key runs once, every repeat returns the run it names.
func testConcurrentStarts(t *testing.T, newApp NewApp) {
	var ran sync.Map
	wf := voltro.NewWorkflow("wft.starts", func(wc *voltro.WorkflowContext, n int) (int, error) {
		return voltro.Step(wc, "once", func(context.Context) (int, error) {
			v, _ := ran.LoadOrStore(n, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
			return n * 2, nil
		})
	})
	app := newApp(t, func(a *voltro.App) { check(t, a.Register(wf)) })
	ctx := ctxT(t)
	const old, fresh = 20, 40
	ids := map[int]string{}
	for i := 0; i < old; i++ {
		h, err := wf.Start(ctx, app, i, voltro.WithKey(fmt.Sprint("k", i)))
		check(t, err)
		ids[i] = h.ID
	}
	var wg sync.WaitGroup
	errc := make(chan error, old+fresh)
	for i := 0; i < old+fresh; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := wf.Start(ctx, app, i, voltro.WithKey(fmt.Sprint("k", i)))
			if err != nil {
				errc <- fmt.Errorf("start %d: %w", i, err)
				return
			}
			if i < old && h.ID != ids[i] {
				errc <- fmt.Errorf("repeat of key k%d: run %s, want %s", i, h.ID, ids[i])
				return
			}
			v, err := h.Result(ctx)
			if err != nil || v != i*2 {
				errc <- fmt.Errorf("run %d: %d, %v", i, v, err)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	for i := 0; i < old+fresh; i++ {
		v, ok := ran.Load(i)
		if !ok || v.(*atomic.Int64).Load() != 1 {
			t.Errorf("run %d: step ran %v times, want once", i, v)
		}
	}
}

func testStartContext(t *testing.T, newApp NewApp) {
	child := voltro.NewWorkflow("wft.sc.child", func(wc *voltro.WorkflowContext, _ int) (voltro.StartInfo, error) {
		return wc.StartInfo()
	})
	parent := voltro.NewWorkflow("wft.sc.parent", func(wc *voltro.WorkflowContext, _ int) ([]voltro.StartInfo, error) {
		own, err := wc.StartInfo()
		if err != nil {
			return nil, err
		}
		ch, err := voltro.ExecuteChild(wc, child, 1, voltro.ParentClose("abandon"))
		return []voltro.StartInfo{own, ch}, err
	})
	app := newApp(t, func(a *voltro.App) { check(t, a.Register(child, parent)) })
	ctx := ctxT(t)
	h, err := parent.Start(ctx, app, 0, voltro.WithSubject("user:42"))
	check(t, err)
	got, err := h.Result(ctx)
	check(t, err)
	if len(got) != 2 || got[0].Subject != "user:42" || got[0].Source != "api" ||
		got[1].Source != "child" || got[1].ParentID != h.ID || got[1].ParentClose != "abandon" {
		t.Fatalf("start contexts: %+v", got)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type chainIn struct {
	N int `json:"n"`
}

func testSteps(t *testing.T, newApp NewApp) {
	var calls sync.Map
	count := func(k string) int64 {
		v, _ := calls.LoadOrStore(k, new(atomic.Int64))
		return v.(*atomic.Int64).Load()
	}
	wf := voltro.NewWorkflow("wft.three", func(wc *voltro.WorkflowContext, in chainIn) (int, error) {
		v := in.N
		for i := 0; i < 3; i++ {
			var err error
			v, err = voltro.Step(wc, fmt.Sprint("add", i), func(ctx context.Context) (int, error) {
				c, _ := calls.LoadOrStore(fmt.Sprint(wc.ExecutionID(), i), new(atomic.Int64))
				c.(*atomic.Int64).Add(1)
				return v + 1, nil
			})
			if err != nil {
				return 0, err
			}
		}
		return v, nil
	})
	app := newApp(t, func(a *voltro.App) { check(t, a.Register(wf)) })
	ctx := ctxT(t)
	h, err := wf.Start(ctx, app, chainIn{N: 10}, voltro.WithKey("k1"))
	check(t, err)
	got, err := h.Result(ctx)
	check(t, err)
	if got != 13 {
		t.Fatalf("result %d", got)
	}
	for i := 0; i < 3; i++ {
		if n := count(fmt.Sprint(h.ID, i)); n != 1 {
			t.Fatalf("step %d ran %d times", i, n)
		}
	}
	// same key, same run, no new execution
	h2, err := wf.Start(ctx, app, chainIn{N: 99}, voltro.WithKey("k1"))
	check(t, err)
	if h2.ID != h.ID {
		t.Fatalf("a repeated start with the same key must be the same run: %s vs %s", h2.ID, h.ID)
	}
	got, err = h2.Result(ctx)
	check(t, err)
	if got != 13 || count(fmt.Sprint(h.ID, 0)) != 1 {
		t.Fatalf("repeat start re-ran: %d", got)
	}
	st, err := app.Get(ctx, h.ID)
	check(t, err)
	if st.Status != "completed" || string(st.Output) != "13" || st.Name != "wft.three" || st.FinishedAt == nil {
		t.Fatalf("status: %+v", st)
	}
	// many concurrent runs
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := wf.Run(ctx, app, chainIn{N: i})
			if err == nil && v != i+3 {
				err = fmt.Errorf("run %d returned %d", i, v)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

var errFlaky = errors.New("flaky dependency")

func testRetries(t *testing.T, newApp NewApp) {
	var flaky, fatal atomic.Int64
	wf := voltro.NewWorkflow("wft.retry", func(wc *voltro.WorkflowContext, _ struct{}) (string, error) {
		v, err := voltro.Step(wc, "flaky", func(ctx context.Context) (string, error) {
			if flaky.Add(1) < 3 {
				return "", errFlaky
			}
			return "ok", nil
		}, voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 5, Backoff: func(int) time.Duration { return 5 * time.Millisecond }}))
		if err != nil {
			return "", err
		}
		_, err = voltro.Step(wc, "charge", func(ctx context.Context) (int, error) {
			fatal.Add(1)
			return 0, voltro.NewError(voltro.CodeInvalidArgument, "card declined")
		}, voltro.NonRetryable(voltro.ErrInvalidArgument))
		if errors.Is(err, voltro.ErrInvalidArgument) {
			return v + " then declined", nil
		}
		return v, err
	})
	app := newApp(t, func(a *voltro.App) { check(t, a.Register(wf)) })
	ctx := ctxT(t)
	got, err := wf.Run(ctx, app, struct{}{})
	check(t, err)
	if got != "ok then declined" || flaky.Load() != 3 || fatal.Load() != 1 {
		t.Fatalf("got %q flaky=%d fatal=%d", got, flaky.Load(), fatal.Load())
	}
}

func testErrors(t *testing.T, newApp NewApp) {
	wf := voltro.NewWorkflow("wft.fail", func(wc *voltro.WorkflowContext, _ struct{}) (int, error) {
		_, err := voltro.Step(wc, "lookup", func(ctx context.Context) (int, error) {
			return 0, voltro.NewError(voltro.CodeNotFound, "customer 42 not found")
		}, voltro.WithRetry(voltro.RetryPolicy{MaxAttempts: 1}))
		return 0, err
	})
	app := newApp(t, func(a *voltro.App) { check(t, a.Register(wf)) })
	ctx := ctxT(t)
	_, err := wf.Run(ctx, app, struct{}{})
	if !errors.Is(err, voltro.ErrNotFound) || !strings.Contains(err.Error(), "customer 42") {
		t.Fatalf("the error's code must survive the journal: %v", err)
	}
	var ve *voltro.Error
	if !errors.As(err, &ve) || ve.Code != voltro.CodeNotFound {
		t.Fatalf("errors.As: %v", err)
	}
}

func testSleep(t *testing.T, newApp NewApp) {
	wf := voltro.NewWorkflow("wft.nap", func(wc *voltro.WorkflowContext, d time.Duration) (string, error) {
		a, _ := voltro.Step(wc, "before", func(ctx context.Context) (int64, error) { return time.Now().UnixNano(), nil })
		wc.Sleep(d)
		b, _ := voltro.Step(wc, "after", func(ctx context.Context) (int64, error) { return time.Now().UnixNano(), nil })
		return time.Duration(b - a).String(), nil
	})
	app := newApp(t, func(a *voltro.App) { check(t, a.Register(wf)) })
	ctx := ctxT(t)
	h, err := wf.Start(ctx, app, 400*time.Millisecond)
	check(t, err)
	time.Sleep(150 * time.Millisecond)
	st, err := app.Get(ctx, h.ID)
	check(t, err)
	if st.Status != "suspended" || !strings.Contains(st.Waiting.String(), "sleep") {
		t.Fatalf("a sleeping run is suspended: %+v", st)
	}
	got, err := h.Result(ctx)
	check(t, err)
	d, _ := time.ParseDuration(got)
	if d < 400*time.Millisecond || d > 5*time.Second {
		t.Fatalf("slept %v", d)
	}
}

func testSignals(t *testing.T, newApp NewApp) {
	type decision struct {
		Approved bool   `json:"approved"`
		By       string `json:"by"`
	}
	wf := voltro.NewWorkflow("wft.approval", func(wc *voltro.WorkflowContext, timeout time.Duration) (string, error) {
		d, err := voltro.AwaitSignal[decision](wc, "approve", timeout)
		if errors.Is(err, voltro.ErrDeadline) {
			return "timed out", nil
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%v by %s", d.Approved, d.By), nil
	})
	app := newApp(t, func(a *voltro.App) { check(t, a.Register(wf)) })
	ctx := ctxT(t)

	h, err := wf.Start(ctx, app, time.Duration(0))
	check(t, err)
	time.Sleep(100 * time.Millisecond)
	ok, err := app.Signal(ctx, h.ID, "approve", decision{true, "ann"})
	check(t, err)
	ok2, err := app.Signal(ctx, h.ID, "approve", decision{false, "bob"})
	check(t, err)
	if !ok || ok2 {
		t.Fatalf("first writer wins: %v %v", ok, ok2)
	}
	got, err := h.Result(ctx)
	check(t, err)
	if got != "true by ann" {
		t.Fatalf("got %q", got)
	}
	// after the run: the name's first signal still wins, a new name is refused
	if ok3, err := app.Signal(ctx, h.ID, "approve", decision{false, "cy"}); err != nil || ok3 {
		t.Fatalf("a late signal of a received name loses quietly: %v %v", ok3, err)
	}
	if _, err := app.Signal(ctx, h.ID, "other", decision{}); !errors.Is(err, voltro.ErrInvalidArgument) {
		t.Fatalf("a new signal to a finished run: %v", err)
	}

	// a signal racing the start: sent before the run reaches its await
	for i := 0; i < 10; i++ {
		h, err := wf.Start(ctx, app, time.Duration(0))
		check(t, err)
		_, err = app.Signal(ctx, h.ID, "approve", decision{true, fmt.Sprint("racer", i)})
		check(t, err)
		got, err := h.Result(ctx)
		check(t, err)
		if got != fmt.Sprintf("true by racer%d", i) {
			t.Fatalf("race %d: %q", i, got)
		}
	}

	// timeout
	h, err = wf.Start(ctx, app, 200*time.Millisecond)
	check(t, err)
	got, err = h.Result(ctx)
	check(t, err)
	if got != "timed out" {
		t.Fatalf("timeout: %q", got)
	}
	if _, err := app.Signal(ctx, h.ID, "approve", decision{}); !errors.Is(err, voltro.ErrInvalidArgument) {
		t.Fatalf("a finished run takes no signals: %v", err)
	}
	if _, err := app.Signal(ctx, "wf_nope", "approve", decision{}); !errors.Is(err, voltro.ErrNotFound) {
		t.Fatalf("unknown run: %v", err)
	}
}

func testChildren(t *testing.T, newApp NewApp) {
	child := voltro.NewWorkflow("wft.child", func(wc *voltro.WorkflowContext, n int) (int, error) {
		return voltro.Step(wc, "square", func(ctx context.Context) (int, error) { return n * n, nil })
	})
	parent := voltro.NewWorkflow("wft.parent", func(wc *voltro.WorkflowContext, n int) (int, error) {
		sum := 0
		for i := 1; i <= n; i++ {
			v, err := voltro.ExecuteChild(wc, child, i)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	app := newApp(t, func(a *voltro.App) { check(t, a.Register(child, parent)) })
	ctx := ctxT(t)
	got, err := parent.Run(ctx, app, 4)
	check(t, err)
	if got != 1+4+9+16 {
		t.Fatalf("sum %d", got)
	}
}

func testCancel(t *testing.T, newApp NewApp) {
	waiter := voltro.NewWorkflow("wft.waiter", func(wc *voltro.WorkflowContext, _ int) (string, error) {
		return voltro.AwaitSignal[string](wc, "go", 0)
	})
	parent := voltro.NewWorkflow("wft.cparent", func(wc *voltro.WorkflowContext, policy voltro.ParentClosePolicy) (string, error) {
		return voltro.ExecuteChild(wc, waiter, 1, voltro.ParentClose(policy))
	})
	app := newApp(t, func(a *voltro.App) { check(t, a.Register(waiter, parent)) })
	ctx := ctxT(t)
	for _, policy := range []voltro.ParentClosePolicy{voltro.ParentCloseTerminate, voltro.ParentCloseAbandon} {
		h, err := parent.Start(ctx, app, policy)
		check(t, err)
		childID := h.ID + "/0"
		waitStatus(t, app, childID, "suspended")
		check(t, app.Cancel(ctx, h.ID))
		if _, err := h.Result(ctx); !errors.Is(err, voltro.ErrCancelled) {
			t.Fatalf("cancelled parent: %v", err)
		}
		if policy == voltro.ParentCloseTerminate {
			waitStatus(t, app, childID, "cancelled")
		} else {
			time.Sleep(300 * time.Millisecond)
			st, err := app.Get(ctx, childID)
			check(t, err)
			if st.Status != "suspended" {
				t.Fatalf("an abandoned child keeps running: %+v", st)
			}
			_, err = app.Signal(ctx, childID, "go", "done")
			check(t, err)
			if v, err := voltro.GetHandle[string](app, childID).Result(ctx); err != nil || v != "done" {
				t.Fatalf("abandoned child result: %q %v", v, err)
			}
		}
	}
}

func waitStatus(t *testing.T, app *voltro.App, id string, status voltro.RunStatus) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := app.Get(context.Background(), id)
		if err == nil && st.Status == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never reached %s (last %+v, %v)", id, status, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testDivergence(t *testing.T, newApp NewApp) {
	var v2 atomic.Bool
	wf := voltro.NewWorkflow("wft.diverge", func(wc *voltro.WorkflowContext, _ int) (int, error) {
		name := "reserve"
		if v2.Load() {
			name = "charge" // a deploy reordered the steps
		}
		if _, err := voltro.Step(wc, name, func(ctx context.Context) (int, error) { return 1, nil }); err != nil {
			return 0, err
		}
		_, err := voltro.AwaitSignal[int](wc, "continue", 0)
		return 0, err
	})
	app := newApp(t, func(a *voltro.App) { check(t, a.Register(wf)) })
	ctx := ctxT(t)
	h, err := wf.Start(ctx, app, 0)
	check(t, err)
	waitStatus(t, app, h.ID, "suspended")
	v2.Store(true)
	_, err = app.Signal(ctx, h.ID, "continue", 1)
	check(t, err)
	_, err = h.Result(ctx)
	if !errors.Is(err, voltro.ErrNonDeterminism) || !strings.Contains(err.Error(), `"reserve"`) || !strings.Contains(err.Error(), `"charge"`) {
		t.Fatalf("a divergent replay must fail naming both steps: %v", err)
	}
}
