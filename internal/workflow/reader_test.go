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

// fakeRuns answers PollExecutions for the ids it holds, counting calls.
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
	// the first two reads take both slots and hang there (one at a time:
	// asked together, both could go out in the first read)
	wg.Add(2)
	go ask("r0", true)
	waitFor(t, func() bool { return f.calls.Load() == 1 })
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
	waitFor(t, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.inFlight == 0 })
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) != 0 || len(r.order) != 0 {
		t.Errorf("left over: %d pending, %d ordered", len(r.pending), len(r.order))
	}
}

func TestRunReaderKeepsAnIdsErrorToItsCaller(t *testing.T) {
	refused := errs.New(errs.CodeInvalidArgument, "malformed id")
	var calls atomic.Int64
	hold := make(chan struct{})
	r := newRunReader(func(ctx context.Context, ids []string) ([]store.Execution, error) {
		if calls.Add(1) == 1 {
			<-hold // the reads below queue behind this one
		}
		var out []store.Execution
		for _, id := range ids {
			if id == "bad\x00" {
				return nil, refused // the database refuses the whole statement
			}
			out = append(out, store.Execution{ID: id})
		}
		return out, nil
	})
	r.inFlight = readers - 1 // one slot: the queued reads share one statement
	first := make(chan error, 1)
	go func() { _, err := r.read(context.Background(), "a"); first <- err }()
	waitFor(t, func() bool { return calls.Load() == 1 })
	type out struct {
		id  string
		err error
	}
	outs := make(chan out, 3)
	for _, id := range []string{"b", "bad\x00", "c"} {
		go func() { _, err := r.read(context.Background(), id); outs <- out{id, err} }()
	}
	waitFor(t, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.order) == 3 })
	close(hold)
	if err := <-first; err != nil {
		t.Fatalf("a: %v", err)
	}
	for range 3 {
		o := <-outs
		switch {
		case o.id == "bad\x00" && !errors.Is(o.err, errs.ErrInvalidArgument):
			t.Errorf("the refused id: want its own error, got %v", o.err)
		case o.id != "bad\x00" && o.err != nil:
			t.Errorf("%s shared a read with a refused id and got its error: %v", o.id, o.err)
		}
	}
}

func TestRunReaderGivesUpOnAFailureEveryIdShares(t *testing.T) {
	broken := errs.New(errs.CodePermission, "SELECT command denied")
	var calls atomic.Int64
	hold := make(chan struct{})
	r := newRunReader(func(context.Context, []string) ([]store.Execution, error) {
		if calls.Add(1) == 1 {
			<-hold
		}
		return nil, broken
	})
	r.inFlight = readers - 1 // one slot: the queued reads share one statement
	go func() { _, _ = r.read(context.Background(), "first") }()
	waitFor(t, func() bool { return calls.Load() == 1 })
	const n = 50
	errc := make(chan error, n)
	for i := range n {
		go func() { _, err := r.read(context.Background(), fmt.Sprint("r", i)); errc <- err }()
	}
	waitFor(t, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.order) == n })
	close(hold)
	for range n {
		if err := <-errc; !errors.Is(err, errs.ErrPermission) {
			t.Fatalf("want the store's error, got %v", err)
		}
	}
	// the first read, the batch of n, then oneByOneGiveUp alone
	if c := calls.Load(); c != 2+oneByOneGiveUp {
		t.Fatalf("%d store calls: a failure every id shares was read id by id past %d", c, oneByOneGiveUp)
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
	// the slot is given back after the result is handed over
	waitFor(t, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.inFlight == 0 })
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
