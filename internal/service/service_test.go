package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoopRunsUntilStop(t *testing.T) {
	var running, stopped atomic.Bool
	l := NewLoop(func(ctx context.Context) {
		running.Store(true)
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond) // Stop waits for this
		stopped.Store(true)
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
	l.Stop()
	if !stopped.Load() {
		t.Fatal("Stop returned before the loop did")
	}
	l.Stop() // stopped twice: nothing to wait for
}

func TestStopNeverStarted(t *testing.T) {
	NewLoop(func(context.Context) { t.Error("ran") }).Stop()
	StopAll()
}

type failing struct{}

func (failing) Start(context.Context) error { return errors.New("no") }
func (failing) Stop()                       {}

func TestStartAllStopsWhatItStarted(t *testing.T) {
	var ended atomic.Int32
	loop := func() Service {
		return NewLoop(func(ctx context.Context) { <-ctx.Done(); ended.Add(1) })
	}
	a, b := loop(), loop()
	if err := StartAll(context.Background(), a, b, failing{}, loop()); err == nil {
		t.Fatal("StartAll hid the error")
	}
	if n := ended.Load(); n != 2 {
		t.Fatalf("%d loops ended, want the 2 started", n)
	}
}
