package clock

// The Clock interface and its wall-clock implementation.

import (
	"context"
	"time"
)

// Clock tells the time and waits on it.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// Sleep waits d, or until ctx ends (then it returns ctx's error). A
	// caller that holds the clock (Hold) gives its hold up while it sleeps
	// and has it back when Sleep returns.
	Sleep(ctx context.Context, d time.Duration) error
	// SleepUntil waits until Now reads t or later, as Sleep does.
	SleepUntil(ctx context.Context, t time.Time) error
	// Hold marks work in progress until release is called: a virtual
	// clock does not move while anything holds it. release may be called
	// more than once; only the first counts.
	Hold() (release func())
}

// Real is the wall clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func noop() {}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) Hold() func()   { return noop }
func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SleepUntil re-reads the clock at least every minute, so a jump of the
// wall clock (a suspended host, an NTP step) is noticed.
func (c realClock) SleepUntil(ctx context.Context, t time.Time) error {
	for {
		d := time.Until(t)
		if d <= 0 {
			return nil
		}
		if err := c.Sleep(ctx, min(d, time.Minute)); err != nil {
			return err
		}
	}
}

// Or is c, or the wall clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}
