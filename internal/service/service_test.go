package service

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoopRunsUntilStop(t *testing.T) {
	var running, stopped atomic.Bool
	l := NewLoop(func(ctx context.Context) error {
		running.Store(true)
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond) // Stop waits for this
		stopped.Store(true)
		return ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_ = l.Start(ctx) // already running: left alone
	cancel()         // the start context's end does not stop the loop
	time.Sleep(20 * time.Millisecond)
	if !running.Load() || stopped.Load() {
		t.Fatalf("running %v, stopped %v after the start context ended", running.Load(), stopped.Load())
	}
	if err := l.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v (the cancellation it asked for is no error)", err)
	}
	if !stopped.Load() {
		t.Fatal("Stop returned before the loop did")
	}
	if err := l.Stop(context.Background()); err != nil { // stopped twice: nothing to wait for
		t.Fatal(err)
	}
}

// What a loop's function returns is not dropped: Stop returns it.
func TestLoopErrorReachesStop(t *testing.T) {
	boom := errors.New("boom")
	l := NewLoop(func(context.Context) error { return boom })
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := l.Stop(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Stop: %v, want the loop's error", err)
	}
}

func TestStopNeverStarted(t *testing.T) {
	if err := NewLoop(func(context.Context) error { t.Error("ran"); return nil }).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := NewSequence().Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// recorder is a part that logs its starts and stops.
type recorder struct {
	name string
	mu   *sync.Mutex
	log  *[]string
	fail error // Start's error
	stop error // Stop's error
}

func (r recorder) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.log = append(*r.log, "start "+r.name)
	return r.fail
}

func (r recorder) Stop(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.log = append(*r.log, "stop "+r.name)
	return r.stop
}

func TestSequenceStartsInOrderStopsInReverse(t *testing.T) {
	var mu sync.Mutex
	var log []string
	part := func(name string) recorder { return recorder{name: name, mu: &mu, log: &log} }
	stopErr := errors.New("b would not stop")
	b := part("b")
	b.stop = stopErr
	s := NewSequence(part("a"), b, nil, part("c"))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); !errors.Is(err, stopErr) {
		t.Fatalf("Stop: %v, want b's error", err)
	}
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if !slices.Equal(log, want) {
		t.Fatalf("%v, want %v", log, want)
	}
}

func TestSequenceStopsWhatItStartedOnFailure(t *testing.T) {
	var mu sync.Mutex
	var log []string
	part := func(name string) recorder { return recorder{name: name, mu: &mu, log: &log} }
	no := errors.New("no")
	bad := part("bad")
	bad.fail = no
	s := NewSequence(part("a"), part("b"), bad, part("never"))
	if err := s.Start(context.Background()); !errors.Is(err, no) {
		t.Fatalf("Start: %v, want the failing part's error", err)
	}
	want := []string{"start a", "start b", "start bad", "stop b", "stop a"}
	if !slices.Equal(log, want) {
		t.Fatalf("%v, want %v", log, want)
	}
	if s.Started() {
		t.Fatal("a failed start left parts counted as started")
	}
}

func TestGroupStopsAtOnce(t *testing.T) {
	ended := make(chan struct{}, 3)
	release := make(chan struct{})
	loop := func() Service {
		return NewLoop(func(ctx context.Context) error {
			<-ctx.Done()
			ended <- struct{}{}
			<-release // every loop waits here: a one-by-one stop would hang
			return nil
		})
	}
	g := NewGroup(loop(), loop(), loop())
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Stop(context.Background()) }()
	for range 3 {
		<-ended
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
