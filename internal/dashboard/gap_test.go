package dashboard

// A costly panel read is made less often: the Messages panel's least gap
// between two reads grows with the last read's duration.

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store/memory"
)

func TestMessagesGapGrowsWithReadTime(t *testing.T) {
	d, err := New(Config{Store: memory.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := d.topics()[topicMessages]
	for _, c := range []struct{ took, want time.Duration }{
		{0, 500 * time.Millisecond},
		{20 * time.Millisecond, 500 * time.Millisecond},
		{200 * time.Millisecond, 2 * time.Second},
		{3 * time.Second, 30 * time.Second},
	} {
		if got := p.readGap(c.took); got != c.want {
			t.Errorf("messages: a read of %s, then a gap of %s, want %s", c.took, got, c.want)
		}
	}
	if got := d.topics()[topicSchedules].readGap(time.Second); got != 250*time.Millisecond {
		t.Errorf("schedules: gap %s after a 1s read, want its fixed 250ms", got)
	}

	// the loop follows the rule: a 100 ms read with slow 10 waits at least
	// 1 s for the next, however fast the kicks come (a fixed 50 ms gap
	// would read about every 150 ms: some 16 reads in the window)
	var reads atomic.Int64
	slowRead := func(w http.ResponseWriter, _ *http.Request) {
		reads.Add(1)
		time.Sleep(100 * time.Millisecond)
		_, _ = w.Write([]byte("{}"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lp := &panelTopic{name: "slow", gap: 50 * time.Millisecond, slow: 10, snap: newSnapshot(ctx, slowRead)}
	lp.snap.activate()
	kick := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.panelLoop(ctx, lp, kick, time.Hour, func(event) {})
	}()
	window := time.After(2500 * time.Millisecond)
	for waiting := true; waiting; {
		select {
		case <-window:
			waiting = false
		case kick <- struct{}{}:
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	<-done
	// reads at 0, ~1.1 s, ~2.2 s; a loaded machine reads more slowly still
	if n := reads.Load(); n > 4 || n < 1 {
		t.Fatalf("%d reads of a 100 ms panel in 2.5 s of constant changes, want 1 to 4 (a gap of 10 × the read time)", n)
	}
}
