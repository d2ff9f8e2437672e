package e2e

// Futures across real processes: a run fans out Go steps and children on
// three runners, the one running it is SIGKILLed mid-fan-out, and the run
// completes on a survivor with the right result, no step that was
// journaled ran again, and its journal replays.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testdb"
)

// FanIn is the fan-out workflow's input.
type FanIn struct {
	Steps, Children int
}

// fanChild sleeps durably and returns ten times its input.
var fanChild = voltro.NewWorkflow("e2e.fanchild", func(wc *voltro.WorkflowContext, n int) (int, error) {
	wc.Sleep(500 * time.Millisecond)
	return 10 * n, nil
})

// fanOut runs in.Steps Go steps (each says EFFECT on stdout when its
// function runs, then takes 150 ms) and in.Children children side by side,
// and sums what they return.
func fanOut(say func(string, ...any)) *voltro.Workflow[FanIn, int] {
	return voltro.NewWorkflow("e2e.fanout", func(wc *voltro.WorkflowContext, in FanIn) (int, error) {
		var steps, kids []*voltro.Future[int]
		for i := range in.Steps {
			name := fmt.Sprintf("step-%d", i)
			steps = append(steps, voltro.Go(wc, name, func(ctx context.Context) (int, error) {
				say("EFFECT %s %s", wc.ExecutionID(), name)
				select {
				case <-time.After(150 * time.Millisecond):
				case <-ctx.Done():
					return 0, ctx.Err()
				}
				return i, nil
			}))
		}
		for i := range in.Children {
			kids = append(kids, voltro.StartChild(wc, fanChild, i))
		}
		sum := 0
		for _, fs := range [][]*voltro.Future[int]{steps, kids} {
			vs, err := voltro.All(wc, fs...)
			if err != nil {
				return 0, err
			}
			for _, v := range vs {
				sum += v
			}
		}
		return sum, nil
	}, voltro.WithMaxParallel(8))
}

func TestFanOutSurvivesSIGKILL(t *testing.T) {
	url := testdb.Postgres(t, "e2e_fanout")
	env := map[string]string{"DB_URL": url, "E2E_FANOUT": "1", "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "500ms"}
	procs := []*proc{startProc(t, "fan-0", env), startProc(t, "fan-1", env), startProc(t, "fan-2", env)}
	app := client(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	in := FanIn{Steps: 120, Children: 10}
	h, err := fanOut(nil).Start(ctx, app, in)
	if err != nil {
		t.Fatal(err)
	}
	// the runner running it: the first to say EFFECT for it; killed once
	// it has run a few steps (8 at a time, 150 ms each: 15 rounds in all)
	effects := func(p *proc) []string {
		var out []string
		for _, l := range p.output() {
			if rest, ok := strings.CutPrefix(l, "EFFECT "+h.ID+" "); ok {
				out = append(out, rest)
			}
		}
		return out
	}
	var victim *proc
	for deadline := time.Now().Add(30 * time.Second); victim == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no runner ran a step of the run within 30 s")
		}
		for _, p := range procs {
			if len(effects(p)) >= 24 {
				victim = p
			}
		}
	}
	victim.kill()
	got, err := h.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range in.Steps {
		want += i
	}
	for i := range in.Children {
		want += 10 * i
	}
	if got != want {
		t.Fatalf("the run returned %d, want %d", got, want)
	}
	// every step ran; a step journaled by the victim ran nowhere else
	d := look(t, url)
	journal, err := d.Journal(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	writer := map[string]string{}
	for _, e := range journal {
		if e.Kind == "step" {
			writer[e.Name] = e.Runner
		}
	}
	ranOn := map[string][]string{}
	for _, p := range procs {
		for _, s := range effects(p) {
			ranOn[s] = append(ranOn[s], p.addr)
		}
	}
	reruns, byVictim := 0, 0
	for i := range in.Steps {
		name := fmt.Sprintf("step-%d", i)
		on := ranOn[name]
		if len(on) == 0 || writer[name] == "" {
			t.Fatalf("%s: ran on %v, journaled by %q", name, on, writer[name])
		}
		if writer[name] == victim.addr && len(on) > 1 {
			t.Errorf("%s was journaled by the killed runner %s and ran again on %v", name, victim.addr, on[1:])
		}
		reruns += len(on) - 1
		if writer[name] == victim.addr {
			byVictim++
		}
	}
	if byVictim == 0 {
		t.Fatalf("no step journaled by the killed runner %s (journal runners %v): the check above saw nothing", victim.addr, writer)
	}
	// only the steps in flight at the kill ran twice: at most 8
	if reruns > 8 {
		t.Errorf("%d step runs repeated, more than the 8 that could be in flight", reruns)
	}
	t.Logf("run %s: %d steps started on %s before the kill, %d journaled there, %d run again", h.ID, len(effects(victim)), victim.name, byVictim, reruns)
}
