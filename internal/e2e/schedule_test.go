package e2e

// Schedules in cluster coordination across real processes: the holder of
// the schedule's shard is killed mid-way; no tick fires twice and none is
// lost: those that went by during the takeover fire late, on a survivor.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/sharding"
	"github.com/voltro/voltro/internal/testwait"
)

func ticks(ps []*proc) map[int64][]string {
	out := map[int64][]string{}
	for _, p := range ps {
		for _, l := range p.output() {
			f := strings.Fields(l)
			if len(f) == 3 && f[0] == "TICK" {
				at, _ := strconv.ParseInt(f[1], 10, 64)
				out[at] = append(out[at], p.name)
			}
		}
	}
	return out
}

func TestScheduleClusterFailover(t *testing.T) {
	for _, db := range sqlDatabases {
		t.Run(db.name, func(t *testing.T) { scheduleClusterFailover(t, db.url(t, "sched_cluster")) })
	}
}

func scheduleClusterFailover(t *testing.T, url string) {
	var ps []*proc
	for i := 0; i < 4; i++ {
		ps = append(ps, startProc(t, fmt.Sprint("sched-", i), map[string]string{
			"DB_URL": url, "E2E_SCHED": "cluster", "E2E_WORK": "1ms", "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "2s",
		}))
	}
	d := look(t, url)
	testwait.For(t, 60*time.Second, "shards spread over four", func() bool {
		o := owners(t, d)
		return o[ps[0].addr] == 75 && o[ps[1].addr] == 75 && o[ps[2].addr] == 75 && o[ps[3].addr] == 75
	})
	shard := sharding.For("default", "schedule:e2e.tick", 300)
	locks, err := d.ShardLocks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var victim *proc
	for _, l := range locks {
		if l.Shard == shard {
			for _, p := range ps {
				if p.addr == l.Owner {
					victim = p
				}
			}
		}
	}
	if victim == nil {
		t.Fatalf("no process holds the schedule's shard %s", shard)
	}
	time.Sleep(12 * time.Second)
	killed := victim.kill()
	time.Sleep(12 * time.Second)
	for _, p := range ps {
		if p != victim {
			p.term()
		}
	}
	got := ticks(ps)
	var seconds []int64
	for at, who := range got {
		if len(who) > 1 {
			t.Fatalf("tick %d fired %d times: %v", at, len(who), who)
		}
		seconds = append(seconds, at)
	}
	sort.Slice(seconds, func(i, j int) bool { return seconds[i] < seconds[j] })
	if len(seconds) < 18 {
		t.Fatalf("only %d ticks fired: %v", len(seconds), seconds)
	}
	// Every tick from the first to the last fired, the takeover's late.
	var lost []int64
	for at := seconds[0]; at <= seconds[len(seconds)-1]; at++ {
		if _, ok := got[at]; !ok {
			lost = append(lost, at)
		}
	}
	before, after := 0, 0
	var latest time.Duration
	for _, s := range seconds {
		if time.Unix(s, 0).Before(killed) {
			before++
		} else {
			after++
		}
	}
	for _, p := range ps {
		for _, l := range p.output() {
			f := strings.Fields(l)
			if len(f) == 3 && f[0] == "TICK" {
				at, _ := strconv.ParseInt(f[1], 10, 64)
				ns, _ := strconv.ParseInt(f[2], 10, 64)
				latest = max(latest, time.Unix(0, ns).Sub(time.Unix(at, 0)))
			}
		}
	}
	t.Logf("%d ticks fired once each (%d before the kill, %d after), the latest %s after its time", len(seconds), before, after, latest.Round(time.Millisecond))
	if after < 5 {
		t.Fatalf("the schedule did not keep firing after its owner died: %d ticks after", after)
	}
	if len(lost) > 0 {
		t.Fatalf("%d ticks never fired: %v (the owner was killed at %d)", len(lost), lost, killed.Unix())
	}
}
