package store

// MeasureCommits times commits, not the setting up of its workers: a
// server slow to accept connections (a loaded machine) must neither fail
// a short window nor count against the rate.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestMeasureCommitsSetsUpBeforeTheWindow(t *testing.T) {
	const window = 50 * time.Millisecond
	var commits atomic.Int64
	rate, err := MeasureCommits(context.Background(), 4, window, func(ctx context.Context) (func(context.Context, int) error, func(), error) {
		// a connect that takes longer than the window and honours ctx,
		// as a driver's does
		select {
		case <-time.After(4 * window):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return func(ctx context.Context, i int) error {
			commits.Add(1)
			time.Sleep(time.Millisecond)
			return nil
		}, func() {}, nil
	})
	if err != nil {
		t.Fatalf("a slow setup failed the measure: %v", err)
	}
	// 4 workers committing every ~1 ms over the window: far more than
	// the rate would read with the setup's time in it
	if n := commits.Load(); n < 20 || rate < float64(n)/(2*window.Seconds()) {
		t.Fatalf("%d commits read as %.0f/s over a %s window", n, rate, window)
	}
}

func TestMeasureCommitsClosesWorkersWhenASetupFails(t *testing.T) {
	refused := errors.New("refused")
	var set, closed atomic.Int64
	_, err := MeasureCommits(context.Background(), 3, 10*time.Millisecond, func(context.Context) (func(context.Context, int) error, func(), error) {
		if set.Add(1) == 2 {
			return nil, nil, refused
		}
		return func(context.Context, int) error { return nil }, func() { closed.Add(1) }, nil
	})
	if !errors.Is(err, refused) {
		t.Fatalf("want the setup's error, got %v", err)
	}
	if closed.Load() != 2 {
		t.Fatalf("%d of the 2 workers set up were closed", closed.Load())
	}
}

// A server that takes longer than the window for one commit (a loaded
// machine: 0 commits/s read in 200 ms with the load at 15) still gives a
// rate: the commit begun in the window is waited for and counted.
func TestMeasureCommitsCountsACommitSlowerThanTheWindow(t *testing.T) {
	const window = 20 * time.Millisecond
	rate, err := MeasureCommits(context.Background(), 2, window, func(context.Context) (func(context.Context, int) error, func(), error) {
		return func(ctx context.Context, i int) error {
			select {
			case <-time.After(5 * window):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, func() {}, nil
	})
	if err != nil {
		t.Fatalf("a commit slower than the window failed the measure: %v", err)
	}
	// 2 commits over at least 5 windows
	if rate <= 0 || rate > 2/(5*window.Seconds())*1.01 {
		t.Fatalf("rate %.1f/s for 2 commits of %s each", rate, 5*window)
	}
}
