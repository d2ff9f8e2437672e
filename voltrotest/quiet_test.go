package voltrotest_test

// What a test sees of the App when things go right (nothing) and wrong
// (its logs; a wait that cannot end, said at once).

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/voltrotest"
)

var idle = voltro.NewWorkflow("idle", func(wc *voltro.WorkflowContext, _ struct{}) (bool, error) {
	return voltro.AwaitSignal[bool](wc, "go", 0) // no timeout: waits for the test
})

// The boot lines and the rest go to a buffer, printed through t.Log only
// when the test failed.
func TestLogsShownOnlyOnFailure(t *testing.T) {
	t.Parallel()
	for _, failed := range []bool{false, true} {
		ft := &exampleT{}
		var logs string
		test := func() {
			defer func() {
				for i := len(ft.cleanups) - 1; i >= 0; i-- {
					ft.cleanups[i]()
				}
			}()
			env := voltrotest.New(ft, idle)
			logs = env.Logs()
			ft.failed = failed
		}
		test()
		if !strings.Contains(logs, "voltro started") {
			t.Fatalf("the env's logs lack the boot line:\n%s", logs)
		}
		shown := strings.Join(ft.logged, "\n")
		if failed != strings.Contains(shown, "voltro started") {
			t.Errorf("failed=%v: the test's log shows %q", failed, shown)
		}
	}
}

// fatalOf runs body with a stand-in *testing.T and returns the message of
// the Fatal that ended it ("" if none).
func fatalOf(body func(t testing.TB)) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	test(body)
	return ""
}

// A WaitFor that nothing but the test could satisfy fails at once and says
// what the run waits on, instead of timing out.
func TestWaitForSaysWhenStuck(t *testing.T) {
	t.Parallel()
	began := time.Now()
	msg := fatalOf(func(ft testing.TB) {
		env := voltrotest.New(ft, idle)
		h, err := idle.Start(ft.Context(), env.App(), struct{}{})
		if err != nil {
			ft.Fatal(err)
		}
		env.WaitFor(h.ID, voltrotest.Finished())
	})
	if !strings.Contains(msg, `suspended on signal "go"`) || !strings.Contains(msg, "nothing runs and nothing is due") {
		t.Fatalf("WaitFor failed with %q, want it to say the run is stuck on its signal", msg)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("WaitFor took %s to see it, want at once", took)
	}
	msg = fatalOf(func(ft testing.TB) {
		env := voltrotest.New(ft, order, payment)
		h, err := order.Start(ft.Context(), env.App(), Order{ID: "o-1"})
		if err != nil {
			ft.Fatal(err)
		}
		env.WaitFor(h.ID, voltrotest.StepCompleted("close")) // refunded instead, after 3 days
	})
	if !strings.Contains(msg, `completed before it was step "close" completed`) {
		t.Fatalf("WaitFor failed with %q, want it to say the run completed first", msg)
	}
}
