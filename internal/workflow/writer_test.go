package workflow

// The group commit's contract with its callers: every request gets its own
// outcome, batches form while transactions are in flight, a failing or
// panicking flush fails its batch and frees its slot, and close writes what
// it accepted.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

func TestGroupCommitBatchesWhileBusy(t *testing.T) {
	var calls, largest atomic.Int64
	release := make(chan struct{})
	g := newGroupCommit(func(_ context.Context, qs []int) ([]int, error) {
		if calls.Add(1) <= flushers {
			<-release // hold both slots until everyone has queued
		}
		if n := int64(len(qs)); n > largest.Load() {
			largest.Store(n)
		}
		out := make([]int, len(qs))
		for i, q := range qs {
			out[i] = q * 2
		}
		return out, nil
	})
	const n = 100
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := g.do(context.Background(), i)
			if err != nil || v != i*2 {
				errc <- errors.New("wrong outcome")
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.mu.Lock()
		queued := len(g.pending)
		g.mu.Unlock()
		if queued == n-flushers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d queued behind the busy slots, want %d", queued, n-flushers)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if largest.Load() != n-flushers || calls.Load() != flushers+1 {
		t.Fatalf("%d flushes, largest %d: want the %d that queued in one", calls.Load(), largest.Load(), n-flushers)
	}
	g.close()
	if _, err := g.do(context.Background(), 1); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("after close: %v", err)
	}
}

func internal(err error) bool {
	var e *errs.Error
	return errors.As(err, &e) && e.Code == errs.CodeInternal
}

func TestGroupCommitFailuresReachEveryCaller(t *testing.T) {
	boom := errors.New("boom")
	var mode atomic.Int32
	g := newGroupCommit(func(_ context.Context, qs []int) ([]int, error) {
		switch mode.Load() {
		case 0:
			return nil, boom
		case 1:
			panic("driver bug")
		default:
			return make([]int, len(qs)-1), nil // one outcome short
		}
	})
	defer g.close()
	for m, want := range []func(error) bool{
		func(err error) bool { return errors.Is(err, boom) },
		internal,
		internal,
	} {
		mode.Store(int32(m))
		if _, err := g.do(context.Background(), 1); !want(err) {
			t.Fatalf("mode %d: %v", m, err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight != 0 {
		t.Fatalf("%d flush slots still taken after the failures", g.inFlight)
	}
}

// A caller queued behind busy transactions gives up when its context ends;
// the callers writing the batches see them through.
func TestGroupCommitWaiterHonoursItsContext(t *testing.T) {
	release := make(chan struct{})
	g := newGroupCommit(func(_ context.Context, qs []int) ([]int, error) {
		<-release
		return qs, nil
	})
	var wg sync.WaitGroup
	for i := range flushers {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = g.do(context.Background(), i) }()
	}
	for {
		g.mu.Lock()
		busy := g.inFlight == flushers
		g.mu.Unlock()
		if busy {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.do(ctx, 99); !errors.Is(err, errs.ErrDeadline) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued behind busy slots past its deadline: %v", err)
	}
	close(release)
	wg.Wait()
	g.close() // the abandoned request is still written
}
