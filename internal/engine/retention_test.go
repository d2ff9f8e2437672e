package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

// Three instances on one store: only the holder of the retention shard
// sweeps, and when it leaves, the instance that takes the shard over
// sweeps in its place.
func TestRetentionSweepsOnOneInstanceAtATime(t *testing.T) {
	d := memory.New()
	var es []*Engine
	for i := range 3 {
		cfg := clusterConfig(t, fmt.Sprintf("ret-%d", i))
		cfg.Retention, cfg.DeadLetterRetention = time.Second, time.Second
		e := startEngine(t, d, cfg)
		if err := e.Register("echo", echo, EntityOptions{}); err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	sweeping := func(live []*Engine) []string {
		var out []string
		for _, e := range live {
			if e.Retention().Stats().Sweeping {
				out = append(out, e.Address())
			}
		}
		return out
	}
	holder := func(live []*Engine) *Engine {
		for _, e := range live {
			if e.Runner().Epoch(e.RetentionShard()) > 0 {
				return e
			}
		}
		return nil
	}
	ctx := context.Background()
	processed := func(n int) {
		for i := range n {
			if _, err := es[0].Request(ctx, Message{EntityType: "echo", EntityID: fmt.Sprint(i), Payload: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	left := func() int {
		ms, err := d.ListMessages(ctx, store.MessageFilter{State: store.StateProcessed})
		if err != nil {
			t.Fatal(err)
		}
		return len(ms)
	}
	processed(5)
	testwait.For(t, 15*time.Second, "the processed messages to be swept", func() bool { return left() == 0 })
	var sweeper *Engine
	testwait.For(t, 10*time.Second, "one sweeping instance, the holder of the retention shard, done with a pass", func() bool {
		s, h := sweeping(es), holder(es)
		if h == nil || len(s) != 1 || s[0] != h.Address() || h.Retention().Stats().Passes == 0 {
			return false
		}
		sweeper = h
		return true
	})
	if st := sweeper.Retention().Stats(); st.Deleted[store.TableMessages] != 5 || st.Deleted[store.TableReplies] != 5 {
		t.Fatalf("the sweeping instance deleted %v, want 5 messages and 5 replies", st.Deleted)
	}
	for _, e := range es {
		if e != sweeper && len(e.Retention().Stats().Deleted) != 0 {
			t.Fatalf("%s does not hold the shard but deleted %v", e.Address(), e.Retention().Stats().Deleted)
		}
	}
	doc := sweeper.Inspect(ctx).Retention
	if doc == nil || !doc.Sweeping || doc.Runs != "1s" || doc.DeadLetters != "1s" || doc.Passes == 0 || doc.Deleted[store.TableMessages] != 5 {
		t.Fatalf("inspect of the sweeper: %+v", doc)
	}

	// the sweeper leaves: another instance takes the shard and sweeps
	var live []*Engine
	for _, e := range es {
		if e != sweeper {
			live = append(live, e)
		}
	}
	if err := sweeper.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	es = live
	processed(3)
	testwait.For(t, 20*time.Second, "the next holder to sweep", func() bool {
		s, h := sweeping(live), holder(live)
		return h != nil && len(s) == 1 && s[0] == h.Address() && left() == 0
	})
}
