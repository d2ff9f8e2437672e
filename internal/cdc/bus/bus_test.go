// Fan-out order, filters and overflow behaviour of the in-process bus.
package bus

import (
	"context"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
)

func ins(table string, id int64, status string) delta.Delta {
	return delta.Delta{Op: delta.Insert, Table: table, Key: delta.Row{"id": id}, Row: delta.Row{"id": id, "status": status}}
}

func TestFilterAndOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := New(16)
	all := b.Subscribe(ctx, "orders", nil)
	paid := b.Subscribe(ctx, "orders", delta.Filter{"status": "paid"})
	b.Publish(ins("orders", 1, "new"), ins("other", 2, "paid"), ins("orders", 3, "paid"))
	for _, want := range []int64{1, 3} {
		if d := <-all; d.Key["id"] != want {
			t.Fatalf("all: got %v, want id %d", d, want)
		}
	}
	if d := <-paid; d.Key["id"] != int64(3) {
		t.Fatalf("paid: got %v", d)
	}
	cancel()
	for range all {
	}
	if _, ok := <-paid; ok {
		t.Fatal("channel not closed after cancel")
	}
}

// A subscriber that does not read gets one resync instead of the changes it
// could not hold, and the publisher never waits for it.
func TestSlowSubscriberGetsResync(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := New(8)
	slow := b.Subscribe(ctx, "t", nil)
	fast := b.Subscribe(ctx, "t", nil)
	got := make(chan int, 1)
	go func() {
		// a reader that keeps up may still overflow a small buffer in this
		// tight loop (and then gets a resync in place of what it missed);
		// what matters is that it keeps receiving: it sees the marker
		// published once the loop is over
		for d := range fast {
			if d.Key["id"] == int64(-1) {
				got <- 1
			}
		}
	}()
	start := time.Now()
	for i := range 10000 {
		b.Publish(ins("t", int64(i), "x"))
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("publishing 10000 deltas with a stuck subscriber took %v", el)
	}
	time.Sleep(100 * time.Millisecond) // let the reader drain its buffer
	b.Publish(ins("t", -1, "marker"))
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("reading subscriber did not reach the last delta")
	}
	// the slow one now reads: a resync comes before anything newer
	sawResync := false
	for range 9 {
		d := <-slow
		if d.Op == delta.Resync {
			sawResync = true
			break
		}
	}
	if !sawResync {
		t.Fatal("slow subscriber got no resync")
	}
	if b.Overflows() == 0 {
		t.Fatal("overflow not counted")
	}
	// drain what is queued, then a new change must arrive
	for drained := false; !drained; {
		select {
		case <-slow:
		case <-time.After(100 * time.Millisecond):
			drained = true
		}
	}
	b.Publish(ins("t", 99999, "after"))
	deadline := time.After(5 * time.Second)
	for {
		select {
		case d := <-slow:
			if d.Key["id"] == int64(99999) {
				return
			}
		case <-deadline:
			t.Fatal("the slow subscriber, once drained, did not get the next change")
		}
	}
}

func TestFilterMatch(t *testing.T) {
	f := delta.Filter{"status": "paid", "n": "7"}
	cases := []struct {
		d    delta.Delta
		want bool
	}{
		{delta.Delta{Op: delta.Insert, Row: delta.Row{"status": "paid", "n": int64(7)}}, true},
		{delta.Delta{Op: delta.Insert, Row: delta.Row{"status": "paid", "n": 7.0}}, true},
		{delta.Delta{Op: delta.Insert, Row: delta.Row{"status": "new", "n": int64(7)}}, false},
		{delta.Delta{Op: delta.Update, Row: delta.Row{"status": "new", "n": int64(7)}, Old: delta.Row{"status": "paid", "n": int64(7)}}, true},
		{delta.Delta{Op: delta.Delete, Key: delta.Row{"id": int64(1)}}, true},
		{delta.Delta{Op: delta.Resync}, true},
	}
	for i, c := range cases {
		if got := f.Match(c.d); got != c.want {
			t.Errorf("case %d: Match = %v, want %v", i, got, c.want)
		}
	}
}
