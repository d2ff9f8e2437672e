package e2e

// Handover under load with real processes: a steady stream of messages
// while runners join and leave (gracefully) again and again. Every message
// is delivered, none waits more than a few seconds past its due time, and
// none runs in two live handlers at once.

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

func storeFilter(typ string) store.MessageFilter { return store.MessageFilter{EntityType: typ} }

func TestHandoverUnderLoad(t *testing.T) {
	url := testdb.Postgres(t, "e2e_handover")
	env := map[string]string{"DB_URL": url, "E2E_WORK": "5ms", "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s"}
	base := startProc(t, "handover-base", env)
	d := look(t, url)
	testwait.For(t, 30*time.Second, "the base runner owns every shard", func() bool { return owners(t, d)[base.addr] == 300 })
	c := client(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sentc := make(chan int, 1)
	go func() {
		n := 0
		for i := 0; ctx.Err() == nil; i++ {
			if err := work.Send(ctx, c, fmt.Sprint("h-", i%200), Work{N: i}); err != nil {
				if ctx.Err() == nil {
					t.Errorf("send: %v", err)
				}
				break
			}
			n++
			time.Sleep(5 * time.Millisecond)
		}
		sentc <- n
	}()
	all := []*proc{base}
	for round := 0; round < 4; round++ {
		j := startProc(t, fmt.Sprint("handover-join-", round), env)
		all = append(all, j)
		testwait.For(t, 30*time.Second, "the joiner takes shards", func() bool { return owners(t, d)[j.addr] > 0 })
		time.Sleep(time.Second)
		j.term() // graceful leave: handlers finish, shards released
		time.Sleep(500 * time.Millisecond)
	}
	cancel()
	n := <-sentc
	testwait.For(t, 30*time.Second, "every message delivered", func() bool {
		ended := map[int64]bool{}
		for _, p := range all {
			for _, e := range p.events() {
				if e.kind == "END" {
					ended[e.id] = true
				}
			}
		}
		return len(ended) >= n
	})
	checkNoConcurrentDelivery(t, all)
	// how long did messages wait past their due time (creation)?
	msgs, err := d.ListMessages(context.Background(), storeFilter("e2e.work"))
	if err != nil {
		t.Fatal(err)
	}
	started := map[int64]time.Time{}
	for _, p := range all {
		for _, e := range p.events() {
			if e.kind == "START" && (started[e.id].IsZero() || e.at.Before(started[e.id])) {
				started[e.id] = e.at
			}
		}
	}
	var waits []time.Duration
	for _, m := range msgs {
		if at, ok := started[m.ID]; ok {
			waits = append(waits, at.Sub(m.DeliverAt))
		}
	}
	if len(waits) < n {
		t.Fatalf("%d of %d messages started", len(waits), n)
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	worst := waits[len(waits)-1]
	t.Logf("%d messages through 4 joins and leaves: wait past due p50 %s, p99 %s, max %s", n, waits[len(waits)/2].Round(time.Millisecond), waits[len(waits)*99/100].Round(time.Millisecond), worst.Round(time.Millisecond))
	if worst > 5*time.Second {
		t.Fatalf("a message waited %s past its due time", worst)
	}
}
