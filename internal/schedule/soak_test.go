// Replica processes on PostgreSQL and on MariaDB fire one-second schedules
// for VOLTRO_SCHEDULE_SOAK (default 60s): four equal processes race for
// "soak", and two processes, one with a clock 700 ms ahead, race for
// "soak-skew". Every second is fired exactly once, with no gap.
package schedule

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"testing"
	"time"
)

// replicaProc is one running replica process.
type replicaProc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
}

// startReplica re-executes the test binary as a replica (see TestMain).
func startReplica(t *testing.T, dbURL, name string, extraEnv ...string) *replicaProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "VOLTRO_SCHEDPROC=1", "DB_URL="+dbURL, "VOLTRO_SCHEDPROC_REPLICA="+name)
	cmd.Env = append(cmd.Env, extraEnv...)
	p := &replicaProc{name: name, cmd: cmd, out: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start replica %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.out)
		}
	})
	return p
}

// wait waits up to 15 s for the process to exit cleanly.
func (p *replicaProc) wait(t *testing.T) {
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("replica %s exited: %v", p.name, err)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("replica %s did not stop on SIGTERM", p.name)
	}
}

func soakDuration(t *testing.T) time.Duration {
	d, err := time.ParseDuration(orDefault(os.Getenv("VOLTRO_SCHEDULE_SOAK"), "60s"))
	if err != nil || d < 10*time.Second {
		t.Fatalf("VOLTRO_SCHEDULE_SOAK=%q: want a duration of at least 10s", os.Getenv("VOLTRO_SCHEDULE_SOAK"))
	}
	return d
}

func TestSoakAdvisoryLockProcesses(t *testing.T) {
	t.Parallel()
	duration := soakDuration(t)
	type fleet struct {
		name     string // dialect/schedule
		url      string
		schedule string
		procs    []*replicaProc
	}
	var fleets []*fleet
	for _, sc := range storeCases(t, "soak", false) {
		if sc.name == "sqlite" {
			continue
		}
		fleets = append(fleets, &fleet{name: sc.name + "/four-equal", url: sc.url, schedule: "soak"},
			&fleet{name: sc.name + "/skewed", url: sc.url, schedule: "soak-skew"})
	}
	started := time.Now()
	for _, f := range fleets {
		skews := []string{"0s", "0s", "0s", "0s"}
		if f.schedule == "soak-skew" {
			skews = []string{"0s", "700ms"}
		}
		for i, skew := range skews {
			f.procs = append(f.procs, startReplica(t, f.url, fmt.Sprintf("%s-%d", f.schedule, i),
				"VOLTRO_SCHEDPROC_COORDINATION=advisoryLock", "VOLTRO_SCHEDPROC_SKEW="+skew, "VOLTRO_SCHEDPROC_SCHEDULE="+f.schedule))
		}
	}
	time.Sleep(duration)
	stopped, n := time.Now(), 0
	for _, f := range fleets {
		for _, p := range f.procs {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			n++
		}
	}
	for _, f := range fleets {
		for _, p := range f.procs {
			p.wait(t)
		}
	}
	t.Logf("%d processes stopped in %v", n, time.Since(stopped).Round(time.Millisecond))
	for _, f := range fleets {
		t.Run(f.name, func(t *testing.T) {
			checkSoak(t, openURL(t, f.url), f.schedule, len(f.procs), started.Add(3*time.Second), stopped.Add(-time.Second), duration)
		})
	}
}

// checkSoak: no tick is won twice anywhere; every tick in [from, to] is won
// exactly once; no replica has two rows for one tick; losers are recorded
// (lostLock) and nothing was missed.
func checkSoak(t *testing.T, st Store, schedule string, replicas int, from, to time.Time, duration time.Duration) {
	rs := runsOf(t, st, schedule)
	type tick struct {
		won      int
		lost     int
		replicas map[string]int
	}
	ticks := map[int64]*tick{}
	wins := map[string]int{}
	for _, r := range rs {
		if r.ScheduledAt.Nanosecond() != 0 {
			t.Fatalf("scheduledAt off the second: %+v", r)
		}
		b := r.ScheduledAt.Unix()
		tk := ticks[b]
		if tk == nil {
			tk = &tick{replicas: map[string]int{}}
			ticks[b] = tk
		}
		tk.replicas[r.ReplicaID]++
		switch r.Outcome {
		case OutcomeWonLock:
			tk.won++
			wins[r.ReplicaID]++
			// A run fired within the last second before SIGTERM may be cut
			// by the stop, as the gap check below leaves that edge out too.
			if r.Status != StatusSucceeded && !r.ScheduledAt.After(to) {
				t.Errorf("won run not succeeded: %+v", r)
			}
		case OutcomeLostLock:
			tk.lost++
		default:
			t.Errorf("unexpected outcome: %+v", r)
		}
	}
	var buckets []int64
	for b := range ticks {
		buckets = append(buckets, b)
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i] < buckets[j] })
	full := 0
	for _, b := range buckets {
		tk := ticks[b]
		if tk.won > 1 {
			t.Errorf("tick %s won %d times", time.Unix(b, 0).UTC().Format(time.TimeOnly), tk.won)
		}
		for rep, n := range tk.replicas {
			if n > 1 {
				t.Errorf("replica %s has %d rows for tick %d", rep, n, b)
			}
		}
		if tk.won+tk.lost == replicas {
			full++
		}
	}
	first, last := from.Truncate(time.Second).Add(time.Second).Unix(), to.Truncate(time.Second).Unix()
	checked := 0
	for b := first; b <= last; b++ {
		checked++
		if tk := ticks[b]; tk == nil || tk.won != 1 {
			t.Errorf("tick %s has no winner (gap)", time.Unix(b, 0).UTC().Format(time.TimeOnly))
		}
	}
	if checked < int(duration/time.Second)-5 {
		t.Errorf("only %d ticks checked", checked)
	}
	claims, err := st.CountScheduleClaims(context.Background(), schedule)
	if err != nil {
		t.Fatal(err)
	}
	if duration >= 40*time.Second && claims >= int64(len(buckets)) {
		t.Errorf("claims were not collected: %d claims for %d ticks", claims, len(buckets))
	}
	t.Logf("%d ticks recorded, %d checked without gap, %d with all %d replicas recorded; wins per replica %v; %d live claims after GC",
		len(buckets), checked, full, replicas, wins, claims)
}
