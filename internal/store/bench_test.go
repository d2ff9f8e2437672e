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
