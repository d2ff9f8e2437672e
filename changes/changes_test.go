package changes

// The public types mirror the internal ones value for value: what a
// subscriber compares against is what the transports send.

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/cdc/delta"
)

func TestConstantsAreTheFeeds(t *testing.T) {
	for got, want := range map[Op]delta.Op{Insert: delta.Insert, Update: delta.Update, Delete: delta.Delete, Resync: delta.Resync} {
		if string(got) != string(want) {
			t.Errorf("op %q, the feed's %q", got, want)
		}
	}
	for got, want := range map[Transport]cdc.Transport{Notify: cdc.Notify, Binlog: cdc.Binlog, Inline: cdc.Inline, Bus: cdc.Bus} {
		if string(got) != string(want) {
			t.Errorf("transport %q, the feed's %q", got, want)
		}
		if got.Label() != want.Label() || got.CrossInstance() != want.CrossInstance() {
			t.Errorf("transport %q: label %q cross %v, the feed's %q %v", got, got.Label(), got.CrossInstance(), want.Label(), want.CrossInstance())
		}
	}
}

// A delta keeps every field, and its JSON (what SSEHandler sends), through
// the conversion.
func TestDeltaConversionKeepsEveryField(t *testing.T) {
	in := delta.Delta{Op: delta.Update, Table: "orders", Key: delta.Row{"id": int64(1)},
		Row: delta.Row{"id": int64(1), "status": "paid"}, Old: delta.Row{"id": int64(1), "status": "new"}, Reason: "r"}
	d := fromInternal(in)
	if back := toInternal(d); !reflect.DeepEqual(back, in) {
		t.Fatalf("round trip %+v, want %+v", back, in)
	}
	pub, _ := json.Marshal(d)
	internal, _ := json.Marshal(in)
	if string(pub) != string(internal) {
		t.Errorf("JSON %s, the feed's %s", pub, internal)
	}
	if n := reflect.TypeOf(Delta{}).NumField(); n != reflect.TypeOf(delta.Delta{}).NumField() {
		t.Errorf("Delta has %d fields, the feed's %d: convert the new one", n, reflect.TypeOf(delta.Delta{}).NumField())
	}
	if !(Filter{"status": "new"}).Match(d) || (Filter{"status": "gone"}).Match(d) {
		t.Error("Filter.Match disagrees with the old and new rows")
	}
	if d.IsResync() || !(Delta{Op: Resync}).IsResync() {
		t.Error("IsResync")
	}
}

// A subscription's channel closes when its context ends and when the feed
// closes, also with a delta waiting that nobody reads.
func TestSubscriptionEnds(t *testing.T) {
	ctx := context.Background()
	feed, err := Open(ctx, Config{URL: "memory:", ReplicaID: "pod-0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	if _, err := feed.DB().ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	cancelled, err := feed.Subscribe(sctx, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	closing, err := feed.Subscribe(ctx, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := feed.Insert(ctx, "t", Row{"id": 1}); err != nil {
		t.Fatal(err)
	}
	cancel()
	drained(t, "cancelled subscription", cancelled)
	if err := feed.Close(); err != nil {
		t.Fatal(err)
	}
	drained(t, "subscription of a closed feed", closing)
}

// drained reads ch until it closes, at most one delta (the one in flight).
func drained(t *testing.T, what string, ch <-chan Delta) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for n := 0; ; n++ {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
			if n > 0 {
				t.Fatalf("%s: more than the delta in flight", what)
			}
		case <-timeout:
			t.Fatalf("%s: channel still open", what)
		}
	}
}
