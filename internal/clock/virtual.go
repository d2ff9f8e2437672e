package clock

// The virtual clock: time moves only when its owner advances it. It counts
// what holds it (work in progress) and who awaits an outcome, so a test
// environment can tell when nothing can run until time moves.

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Virtual is a clock moved by AdvanceTo. The zero value is not usable; use
// NewVirtual.
type Virtual struct {
	mu       sync.Mutex
	now      time.Time
	holds    int
	gen      uint64 // bumped by every Hold and every wake-up
	sleepers []*sleeper
	changed  chan struct{}
}

type sleeper struct {
	at    time.Time
	wake  chan struct{}
	fired bool
}

// NewVirtual is a virtual clock that reads start until advanced.
func NewVirtual(start time.Time) *Virtual {
	return &Virtual{now: start, changed: make(chan struct{}, 1)}
}

// Now is the virtual time.
func (v *Virtual) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// notifyLocked tells the owner that holds, awaiters or sleepers changed.
func (v *Virtual) notifyLocked() {
	select {
	case v.changed <- struct{}{}:
	default:
	}
}

// Changed receives after holds or sleepers change.
func (v *Virtual) Changed() <-chan struct{} { return v.changed }

// Hold marks work in progress until release is called.
func (v *Virtual) Hold() func() {
	v.mu.Lock()
	v.holds++
	v.gen++
	v.mu.Unlock()
	return v.once(func() { v.holds-- })
}

// once returns a release that runs undo under the lock the first time.
func (v *Virtual) once(undo func()) func() {
	var o sync.Once
	return func() {
		o.Do(func() {
			v.mu.Lock()
			undo()
			v.notifyLocked()
			v.mu.Unlock()
		})
	}
}

// Sleep waits until the clock has moved d past now.
func (v *Virtual) Sleep(ctx context.Context, d time.Duration) error {
	return v.SleepUntil(ctx, v.Now().Add(d))
}

// SleepUntil waits until the clock reads t. The caller's hold is given up
// while it sleeps: AdvanceTo takes one back for it as it wakes it, so the
// clock stays held from the wake-up on, until the caller's work is done.
func (v *Virtual) SleepUntil(ctx context.Context, t time.Time) error {
	v.mu.Lock()
	if !t.After(v.now) {
		v.mu.Unlock()
		return ctx.Err()
	}
	s := &sleeper{at: t, wake: make(chan struct{})}
	v.sleepers = append(v.sleepers, s)
	v.holds--
	v.notifyLocked()
	v.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		v.mu.Lock()
		defer v.mu.Unlock()
		if s.fired {
			return nil // woken as ctx ended: the hold was taken back already
		}
		v.sleepers = slices.DeleteFunc(v.sleepers, func(x *sleeper) bool { return x == s })
		v.holds++
		v.gen++
		return ctx.Err()
	}
}

// State is a snapshot of the clock.
type State struct {
	Now   time.Time
	Holds int       // work in progress
	Next  time.Time // the earliest sleeper's wake-up time; zero if none
	Gen   uint64    // changes whenever something takes a hold
}

// State reads the clock's counters.
func (v *Virtual) State() State {
	v.mu.Lock()
	defer v.mu.Unlock()
	st := State{Now: v.now, Holds: v.holds, Gen: v.gen}
	for _, s := range v.sleepers {
		if st.Next.IsZero() || s.at.Before(st.Next) {
			st.Next = s.at
		}
	}
	return st
}

// AdvanceTo moves the clock to t (never back) and wakes every sleeper due
// by then, each with a hold taken for it. It returns how many it woke.
func (v *Virtual) AdvanceTo(t time.Time) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if t.After(v.now) {
		v.now = t
	}
	n := 0
	v.sleepers = slices.DeleteFunc(v.sleepers, func(s *sleeper) bool {
		if s.at.After(v.now) {
			return false
		}
		s.fired = true
		v.holds++
		close(s.wake)
		n++
		return true
	})
	if n > 0 {
		v.gen++
	}
	return n
}
