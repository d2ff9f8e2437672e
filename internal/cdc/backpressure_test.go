// Slow subscribers: bounded buffers, resync signals, writers never wait.
package cdc

import (
	"context"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/testdb"
)

// A subscriber that stops reading never slows writers down: its bounded
// buffer overflows into one resync signal, and changes after it still come.
func TestSlowSubscriberDoesNotBlockWriters(t *testing.T) {
	cases := []struct{ name, url string }{
		{"memory", "memory:"},
		{"postgres", testdb.Postgres(t, "cdcslow")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			w := open(t, Config{URL: c.url, ReplicaID: "w", Buffer: 8})
			r := w
			if w.Transport() == Notify {
				r = open(t, Config{URL: c.url, ReplicaID: "r", Buffer: 8})
			}
			mustExec(t, w, itemsDDL(w.Dialect(), "items"))
			slow := subscribe(t, r, "items", nil)
			const n = 300
			start := time.Now()
			for i := range n {
				if _, err := w.Insert(ctx, "items", delta.Row{"name": "x", "status": string(rune('a' + i%26))}); err != nil {
					t.Fatal(err)
				}
			}
			if el := time.Since(start); el > 20*time.Second {
				t.Fatalf("%d writes took %v with a stuck subscriber", n, el)
			}
			// wait until the feed has seen the last write
			last := subscribe(t, r, "items", delta.Filter{"name": "last"})
			if _, err := w.Insert(ctx, "items", delta.Row{"name": "last"}); err != nil {
				t.Fatal(err)
			}
			next(t, last, 10*time.Second)
			if r.Overflows() == 0 {
				t.Fatal("no overflow recorded")
			}
			d := waitFor(t, slow, 5*time.Second, func(d delta.Delta) bool { return d.Op == delta.Resync })
			if d.Table != "items" || d.Reason == "" {
				t.Fatalf("resync %+v", d)
			}
			waitFor(t, slow, 5*time.Second, func(d delta.Delta) bool { return d.Row["name"] == "last" })
		})
	}
}
