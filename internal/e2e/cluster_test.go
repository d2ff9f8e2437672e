// Package e2e runs real runner processes against real databases: the stall
// regression, SIGKILL failover (advisory locks on PostgreSQL and MariaDB,
// row leases on a 3-node Galera cluster) and pool starvation.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

type database struct {
	name string
	url  func(t *testing.T, name string) string
}

var sqlDatabases = []database{
	{"postgres", func(t *testing.T, n string) string { return testdb.Postgres(t, "e2e_"+n) }},
	{"mariadb", func(t *testing.T, n string) string { return testdb.MariaDB(t, "e2e_"+n) }},
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The regression from the effect-cluster report: a backlog for an entity
// type the runner registers only later is neither claimed nor stranded;
// cluster health is red with the reason meanwhile (readiness stays green:
// no instance leaving traffic would drain it); registering drains it at once.
func TestStallRegression(t *testing.T) {
	for _, db := range sqlDatabases {
		t.Run(db.name, func(t *testing.T) {
			url := db.url(t, "stall")
			ctx := context.Background()
			c := client(t, url)
			for i := 0; i < 30; i++ {
				if err := work.Send(ctx, c, fmt.Sprint("e", i), Work{N: i}); err != nil {
					t.Fatal(err)
				}
			}
			p := startProc(t, "stall-a", map[string]string{"DB_URL": url, "E2E_REGISTER_AFTER": "4s", "E2E_HOST_OTHER": "1", "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s"})
			d := look(t, url)
			testwait.For(t, 30*time.Second, "the runner owns every shard", func() bool { return owners(t, d)[p.addr] == 300 })
			time.Sleep(time.Second)
			if _, ok := p.find("REGISTERED "); ok {
				t.Fatal("registered too early for the test to mean anything")
			}
			msgs, err := d.ListMessages(ctx, store.MessageFilter{EntityType: "e2e.work"})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if m.State != store.StatePending || m.Attempts != 0 || m.ClaimedBy != "" {
					t.Fatalf("a message of a type not registered yet was touched: %+v", m)
				}
			}
			// Nobody hosts the type yet: a cluster condition, not this
			// instance's readiness.
			if code, body := get(t, "http://"+p.inspect+"/_voltro/health/ready"); code != 200 {
				t.Fatalf("readiness must stay green for a backlog no instance hosts: %d %s", code, body)
			}
			code, body := get(t, "http://"+p.inspect+"/_voltro/health/cluster")
			if code != 503 || !strings.Contains(body, "unhosted_type") || !strings.Contains(body, `e2e.work`) {
				t.Fatalf("cluster health must be red naming the unhosted backlog: %d %s", code, body)
			}
			testwait.For(t, 10*time.Second, "registration", func() bool { _, ok := p.find("REGISTERED "); return ok })
			reg, _ := p.find("REGISTERED ")
			var regNs int64
			fmt.Sscan(reg, &regNs)
			testwait.For(t, 10*time.Second, "backlog drained", func() bool { return countKind(p.events(), "END") == 30 })
			last := lastAt(p.events(), "START")
			if took := last.Sub(time.Unix(0, regNs)); took > 2*time.Second {
				t.Fatalf("the backlog started %s after registration; want within one poll interval", took)
			}
			testwait.For(t, 10*time.Second, "cluster healthy again", func() bool {
				code, _ := get(t, "http://"+p.inspect+"/_voltro/health/cluster")
				return code == 200
			})
			p.term()
		})
	}
}

func countKind(evs []event, kind string) int {
	n := 0
	for _, e := range evs {
		if e.kind == kind {
			n++
		}
	}
	return n
}

func lastAt(evs []event, kind string) time.Time {
	var t time.Time
	for _, e := range evs {
		if e.kind == kind && e.at.After(t) {
			t = e.at
		}
	}
	return t
}

// failover: three runners; the one owning the messages' shards is killed
// mid-handler; survivors must start every message within budget.
func failover(t *testing.T, urls []string, extra map[string]string, budget time.Duration) (time.Duration, []*proc) {
	ctx := context.Background()
	var ps []*proc
	for i := 0; i < 3; i++ {
		env := map[string]string{"DB_URL": urls[i%len(urls)], "E2E_WORK": "3s", "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "2s"}
		for k, v := range extra {
			env[k] = v
		}
		ps = append(ps, startProc(t, fmt.Sprint("runner-", i), env))
	}
	d := look(t, urls[0])
	testwait.For(t, 40*time.Second, "shards spread over three runners", func() bool {
		o := owners(t, d)
		return o[ps[0].addr] == 100 && o[ps[1].addr] == 100 && o[ps[2].addr] == 100
	})
	c := client(t, urls[0])
	victim := ps[0]
	ids := entitiesOwnedBy(t, d, victim.addr, 20)
	for i, id := range ids {
		if err := work.Send(ctx, c, id, Work{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 10*time.Second, "the victim runs every message", func() bool { return countKind(victim.events(), "START") == 20 })
	killed := victim.kill()
	survivors := ps[1:]
	testwait.For(t, budget+10*time.Second, "survivors finish every message", func() bool {
		n := 0
		for _, p := range survivors {
			n += countKind(p.events(), "END")
		}
		return n >= 20
	})
	first := map[int64]time.Time{}
	for _, p := range survivors {
		for _, e := range p.events() {
			if e.kind == "START" && (first[e.id].IsZero() || e.at.Before(first[e.id])) {
				first[e.id] = e.at
			}
		}
	}
	var worst time.Duration
	for _, at := range first {
		worst = max(worst, at.Sub(killed))
	}
	if len(first) != 20 {
		t.Fatalf("survivors started %d distinct messages, want 20", len(first))
	}
	checkNoConcurrentDelivery(t, survivors)
	if worst > budget {
		t.Fatalf("the last message resumed %s after the kill; budget %s", worst, budget)
	}
	t.Logf("failover: every message resumed on a survivor within %s of SIGKILL", worst.Round(time.Millisecond))
	return worst, ps
}

// checkNoConcurrentDelivery: no message runs in two live handlers at once.
func checkNoConcurrentDelivery(t *testing.T, ps []*proc) {
	type span struct {
		from, to time.Time
		proc     string
	}
	spans := map[int64][]span{}
	for _, p := range ps {
		open := map[int64]time.Time{}
		for _, e := range p.events() {
			switch e.kind {
			case "START":
				open[e.id] = e.at
			case "END", "CANCEL":
				spans[e.id] = append(spans[e.id], span{open[e.id], e.at, p.name})
				delete(open, e.id)
			}
		}
		for id, from := range open {
			spans[id] = append(spans[id], span{from, time.Now(), p.name})
		}
	}
	for id, ss := range spans {
		sort.Slice(ss, func(i, j int) bool { return ss[i].from.Before(ss[j].from) })
		for i := 1; i < len(ss); i++ {
			if ss[i].from.Before(ss[i-1].to) {
				t.Fatalf("message %d ran on %s and %s at once", id, ss[i-1].proc, ss[i].proc)
			}
		}
	}
}

func TestFailoverAdvisory(t *testing.T) {
	for _, db := range sqlDatabases {
		t.Run(db.name, func(t *testing.T) {
			url := db.url(t, "failover")
			_, ps := failover(t, []string{url}, nil, 2*time.Second)
			var doc struct {
				ShardLock struct{ Mode string } `json:"shardLock"`
			}
			_, body := get(t, "http://"+ps[1].inspect+"/_voltro/inspect/cluster")
			if err := json.Unmarshal([]byte(body), &doc); err != nil || doc.ShardLock.Mode != "advisory" {
				t.Fatalf("expected advisory locks: %v %s", err, body)
			}
		})
	}
}

// Three runners, each connected to a different Galera node: auto resolves
// to row leases, a killed runner's shards move after lease expiry, and no
// shard ever has two owners at once.
func TestFailoverGaleraRowLeases(t *testing.T) {
	nodes := testdb.Galera(t)
	// heartbeat 2s → lease 6s
	worst, ps := failover(t, nodes, nil, 6*time.Second+2*time.Second)
	_ = worst
	for _, p := range ps[1:] {
		var doc struct {
			ShardLock struct{ Mode, Reason string } `json:"shardLock"`
		}
		_, body := get(t, "http://"+p.inspect+"/_voltro/inspect/cluster")
		if err := json.Unmarshal([]byte(body), &doc); err != nil || doc.ShardLock.Mode != "row" || !strings.Contains(doc.ShardLock.Reason, "Galera") {
			t.Fatalf("auto must resolve to row on Galera: %v %s", err, body)
		}
	}
	checkSingleOwner(t, ps)
}

// checkSingleOwner rebuilds every runner's holding intervals from its logs
// and checks no two runners held one shard at the same time, and epochs
// only grow.
func checkSingleOwner(t *testing.T, ps []*proc) {
	type span struct {
		from, to time.Time
		epoch    float64
		proc     string
	}
	spans := map[string][]span{}
	for _, p := range ps {
		open := map[string]span{}
		for _, rec := range p.logRecords() {
			msg, _ := rec["msg"].(string)
			shard, _ := rec["shard"].(string)
			at, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["time"]))
			switch {
			case strings.HasSuffix(msg, "shard acquired"):
				epoch, _ := rec["epoch"].(float64)
				open[shard] = span{from: at, epoch: epoch, proc: p.name}
			case strings.HasSuffix(msg, "shard lost"), strings.HasSuffix(msg, "shard handed over"):
				if s, ok := open[shard]; ok {
					s.to = at
					spans[shard] = append(spans[shard], s)
					delete(open, shard)
				}
			}
		}
		end := time.Now()
		if !p.killed.IsZero() {
			end = p.killed
		}
		for shard, s := range open {
			s.to = end
			spans[shard] = append(spans[shard], s)
		}
	}
	if len(spans) == 0 {
		t.Fatal("no shard intervals found in the runners' logs")
	}
	for shard, ss := range spans {
		sort.Slice(ss, func(i, j int) bool { return ss[i].from.Before(ss[j].from) })
		for i := 1; i < len(ss); i++ {
			if ss[i].proc != ss[i-1].proc && ss[i].from.Before(ss[i-1].to) {
				t.Fatalf("shard %s held by %s (epoch %v) and %s (epoch %v) at once", shard, ss[i-1].proc, ss[i-1].epoch, ss[i].proc, ss[i].epoch)
			}
			if ss[i].epoch <= ss[i-1].epoch {
				t.Fatalf("shard %s: epoch went from %v to %v", shard, ss[i-1].epoch, ss[i].epoch)
			}
		}
	}
}

// A runner whose app pool serves nothing gives its shards up within three
// probe intervals, reports not ready, and rejoins after three good probes.
func TestPoolStarvation(t *testing.T) {
	url := testdb.Postgres(t, "e2e_pool")
	env := map[string]string{"DB_URL": url, "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s", "E2E_WORK": "10ms"}
	a := startProc(t, "pool-a", map[string]string{"DB_URL": url, "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s", "E2E_WORK": "10ms", "E2E_HOG_POOL_AFTER": "6s", "E2E_HOG_FOR": "10s"})
	b := startProc(t, "pool-b", env)
	d := look(t, url)
	testwait.For(t, 6*time.Second, "shards spread", func() bool { o := owners(t, d); return o[a.addr] == 150 && o[b.addr] == 150 })
	testwait.For(t, 10*time.Second, "pool hogged", func() bool { _, ok := a.find("HOGGED "); return ok })
	h, _ := a.find("HOGGED ")
	var n int
	var ns int64
	fmt.Sscan(h, &n, &ns)
	hogged := time.Unix(0, ns)
	testwait.For(t, 8*time.Second, "the starved runner releases its shards", func() bool { return owners(t, d)[a.addr] == 0 })
	released := time.Since(hogged)
	t.Logf("shards released %s after the pool starved", released.Round(time.Millisecond))
	if released > 3*time.Second+2*time.Second {
		t.Fatalf("shards released %s after the pool starved; want about 3 probe intervals", released)
	}
	testwait.For(t, 5*time.Second, "the survivor takes every shard", func() bool { return owners(t, d)[b.addr] == 300 })
	code, body := get(t, "http://"+a.inspect+"/_voltro/health/ready")
	if code != 503 || !(strings.Contains(body, `"pool"`) || strings.Contains(body, "database")) {
		t.Fatalf("a starved runner must not be ready: %d %s", code, body)
	}
	testwait.For(t, 15*time.Second, "pool released", func() bool { _, ok := a.find("UNHOGGED "); return ok })
	u, _ := a.find("UNHOGGED ")
	fmt.Sscan(u, &ns)
	unhogged := time.Unix(0, ns)
	testwait.For(t, 20*time.Second, "the runner rejoins", func() bool { return owners(t, d)[a.addr] > 0 })
	if back := time.Since(unhogged); back < 2*time.Second {
		t.Fatalf("rejoined %s after the pool recovered: a single good probe must not count as recovery", back)
	}
	a.term()
	b.term()
}
