package workflow

// The shared reader's contract with Result: reads asked for while the
// in-flight ones are busy go out together, each caller gets its own run
// (or not found), a caller whose context ends leaves at once, and a store
// that hangs or panics fails the reads as an outage or an internal error.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// fakeRuns answers GetExecutions for the ids it holds, counting calls.
type fakeRuns struct {
	calls   atomic.Int64
	largest atomic.Int64
	hold    chan struct{} // closed to let held calls answer
	held    int64         // the first held calls wait on hold
	have    map[string]bool
}

func (f *fakeRuns) get(ctx context.Context, ids []string) ([]store.Execution, error) {
	if f.calls.Add(1) <= f.held {
		select {
		case <-f.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if n := int64(len(ids)); n > f.largest.Load() {
		f.largest.Store(n)
	}
	var out []store.Execution
	for _, id := range ids {
		if f.have[id] {
			out = append(out, store.Execution{ID: id, Status: store.ExecCompleted})
		}
	}
	return out, nil
}

func TestRunReaderSharesReadsWhileBusy(t *testing.T) {
	f := &fakeRuns{hold: make(chan struct{}), held: readers, have: map[string]bool{}}
	const n = 200
	for i := range n {
		f.have[fmt.Sprint("r", i)] = true
	}
	r := newRunReader(f.get)
	ctx := context.Background()
	var wg sync.WaitGroup
	errc := make(chan error, 2*n+2)
	ask := func(id string, found bool) {
		defer wg.Done()
		x, err := r.read(ctx, id)
		switch {
		case found && (err != nil || x.ID != id):
			errc <- fmt.Errorf("%s: got %+v, %v", id, x, err)
		case !found && !errors.Is(err, errs.ErrNotFound):
			errc <- fmt.Errorf("%s: want not found, got %+v, %v", id, x, err)
		}
	}
	// the first two reads take both slots and hang there
	wg.Add(2)
	go ask("r0", true)
	go ask("r1", true)
	waitFor(t, func() bool { return f.calls.Load() == readers })
	// everything asked for meanwhile queues: some ids twice, one missing
	for i := range n {
		wg.Add(1)
		go ask(fmt.Sprint("r", i), true)
	}
	wg.Add(2)
	go ask("r7", true)
	go ask("missing", false)
	waitFor(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		queued := 0
		for _, chs := range r.pending {
			queued += len(chs)
		}
		return queued == n+2
	})
	close(f.hold)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	// 2 held reads, then the n+1 distinct ids queued behind them in at
	// most one read per slot
	if c := f.calls.Load(); c > readers+2 {
		t.Errorf("%d store calls for %d reads: the queued reads were not shared", c, n+4)
	}
	if l := f.largest.Load(); l < (n+1)/2 {
		t.Errorf("largest shared read held %d runs, want at least %d", l, (n+1)/2)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inFlight != 0 || len(r.pending) != 0 || len(r.order) != 0 {
		t.Errorf("left over: %d in flight, %d pending, %d ordered", r.inFlight, len(r.pending), len(r.order))
	}
}

func TestRunReaderCallerLeavesOnItsContext(t *testing.T) {
	f := &fakeRuns{hold: make(chan struct{}), held: 1, have: map[string]bool{"a": true, "b": true}}
	r := newRunReader(f.get)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := r.read(ctx, "a"); done <- err }()
	waitFor(t, func() bool { return f.calls.Load() == 1 })
	other := make(chan error, 1)
	go func() { _, err := r.read(context.Background(), "b"); other <- err }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("want the caller's cancellation, got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a caller whose context ended still waited for the shared read")
	}
	close(f.hold)
	if err := <-other; err != nil {
		t.Fatalf("another caller's read: %v", err)
	}
}

func TestRunReaderHangingStoreIsAnOutage(t *testing.T) {
	f := &fakeRuns{hold: make(chan struct{}), held: 1, have: map[string]bool{"a": true}}
	r := newRunReader(f.get)
	r.timeout = 50 * time.Millisecond
	_, err := r.read(context.Background(), "a")
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("a store that does not answer: want errs.ErrUnavailable, got %v", err)
	}
	close(f.hold)
	if x, err := r.read(context.Background(), "a"); err != nil || x.ID != "a" {
		t.Fatalf("next read: %+v, %v", x, err)
	}
}

func TestRunReaderPanicFailsTheRead(t *testing.T) {
	r := newRunReader(func(context.Context, []string) ([]store.Execution, error) { panic("boom") })
	_, err := r.read(context.Background(), "a")
	if !internal(err) {
		t.Fatalf("want an internal error, got %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inFlight != 0 {
		t.Fatalf("the panicking read kept its slot: %d in flight", r.inFlight)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
