package workflow

import (
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// What a suspended run's row says it waits on reads back as it was written.
func TestWaitingRoundTrip(t *testing.T) {
	for _, w := range []Waiting{
		{Kind: store.JournalSleep, Seq: 2, Sleep: 7 * 24 * time.Hour},
		{Kind: store.JournalSignal, Name: `ship "now" (operation 9)`, Seq: 3},
		{Kind: store.JournalChild, Name: "wf_abc/4", Seq: 4},
	} {
		got, ok := ParseWaiting(w.String())
		if !ok || got != w {
			t.Errorf("ParseWaiting(%q) = %+v, %v; want %+v", w.String(), got, ok, w)
		}
	}
	for _, s := range []string{"", "sleep", "sleep 1h (operation x)", "nap 1h (operation 1)", `signal ship (operation 1)`} {
		if w, ok := ParseWaiting(s); ok {
			t.Errorf("ParseWaiting(%q) = %+v, want not ok", s, w)
		}
	}
}
