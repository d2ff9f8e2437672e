package voltrotest_test

// Runnable examples of the package, compiled and checked by go test, and
// the stand-in for *testing.T they (and the tests of failures) run with.

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/voltrotest"
)

// exampleT stands in for the *testing.T of a test, so the examples below
// run as they would in one: Fatal panics, Cleanup runs at the end.
type exampleT struct {
	testing.TB
	cleanups []func()
	failed   bool
	logged   []string
}

func (t *exampleT) Helper()                  {}
func (t *exampleT) Cleanup(f func())         { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Failed() bool             { return t.failed }
func (t *exampleT) Logf(f string, a ...any)  { t.logged = append(t.logged, fmt.Sprintf(f, a...)) }
func (t *exampleT) Log(...any)               {}
func (t *exampleT) Context() context.Context { return context.Background() }
func (t *exampleT) Errorf(f string, a ...any) {
	t.failed = true
	fmt.Printf(f+"\n", a...)
}
func (t *exampleT) Fatalf(f string, a ...any) { t.failed = true; panic(fmt.Sprintf(f, a...)) }
func (t *exampleT) Fatal(a ...any)            { t.failed = true; panic(fmt.Sprint(a...)) }
func (t *exampleT) TempDir() string {
	d, err := os.MkdirTemp("", "voltrotest-example")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// test runs body as a test function, then its cleanups.
func test(body func(t testing.TB)) {
	t := &exampleT{}
	defer func() {
		for i := len(t.cleanups) - 1; i >= 0; i-- {
			t.cleanups[i]()
		}
	}()
	body(t)
}

// A workflow that sleeps a week returns at once: time skips ahead while
// Run awaits the result and nothing else can run.
func ExampleNew() {
	test(func(t testing.TB) {
		week := voltro.NewWorkflow("week", func(wc *voltro.WorkflowContext, n int) (int, error) {
			wc.Sleep(7 * 24 * time.Hour)
			return n * 2, nil
		})
		env := voltrotest.New(t, week)
		began := env.Now()
		got, err := week.Run(t.Context(), env.App(), 21)
		fmt.Println(got, err, env.Now().Sub(began))
	})
	// Output: 42 <nil> 168h0m0s
}

// WaitFor stops a run where the test wants it, here suspended on a signal;
// time does not move while nobody waits, so the signal is never late.
func ExampleEnv_WaitFor() {
	test(func(t testing.TB) {
		approval := voltro.NewWorkflow("approval", func(wc *voltro.WorkflowContext, _ struct{}) (string, error) {
			who, err := voltro.AwaitSignal[string](wc, "approved-by", 48*time.Hour)
			if err != nil {
				return "expired", nil
			}
			return "approved by " + who, nil
		})
		env := voltrotest.New(t, approval)
		ctx := t.Context()
		h, _ := approval.Start(ctx, env.App(), struct{}{})
		st := env.WaitFor(h.ID, voltrotest.AwaitingSignal("approved-by"))
		fmt.Println(st.Status)
		if _, err := env.App().Signal(ctx, h.ID, "approved-by", "ada"); err != nil {
			t.Fatal(err)
		}
		fmt.Println(h.Result(ctx))
	})
	// Output:
	// suspended
	// approved by ada <nil>
}

// Advance moves the clock by hand: a schedule every hour fires three times
// in three hours, each at its own tick.
func ExampleEnv_Advance() {
	test(func(t testing.TB) {
		var fired atomic.Int32
		hourly := voltro.NewSchedule("hourly", "@every 1h", func(_ context.Context, at time.Time) error {
			fired.Add(1)
			return nil
		})
		env := voltrotest.New(t, hourly)
		env.Advance(3 * time.Hour)
		fmt.Println(fired.Load(), env.Now().Format(time.RFC3339))
	})
	// Output: 3 2026-01-01T03:00:00Z
}

// Replay checks the histories a test recorded (Env.SaveHistories) against
// today's code; a changed workflow whose operations no longer match fails
// the check before it is deployed.
func ExampleReplay() {
	test(func(t testing.TB) {
		voltrotest.Replay(t, "testdata/histories", order, payment)
		fmt.Println("all histories replay")
	})
	// Output: all histories replay
}
