package clock

import (
	"context"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A sleeper gives its hold up while it sleeps, wakes only when the clock
// passes its time, and is held again from the wake-up on.
func TestVirtualSleepHoldsAndWakes(t *testing.T) {
	v := NewVirtual(epoch)
	release := v.Hold()
	woke := make(chan error, 1)
	go func() { woke <- v.Sleep(context.Background(), time.Hour) }()
	for v.State().Holds != 0 {
		<-v.Changed()
	}
	if st := v.State(); !st.Next.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("next wake-up %v, want %v", st.Next, epoch.Add(time.Hour))
	}
	if n := v.AdvanceTo(epoch.Add(59 * time.Minute)); n != 0 {
		t.Fatalf("woke %d sleepers before their time", n)
	}
	select {
	case <-woke:
		t.Fatal("the sleeper woke before its time")
	default:
	}
	if n := v.AdvanceTo(epoch.Add(2 * time.Hour)); n != 1 {
		t.Fatalf("woke %d sleepers, want 1", n)
	}
	if err := <-woke; err != nil {
		t.Fatal(err)
	}
	if st := v.State(); st.Holds != 1 || !st.Next.IsZero() || !st.Now.Equal(epoch.Add(2*time.Hour)) {
		t.Fatalf("after the wake-up: %+v, want one hold, no sleeper, now +2h", st)
	}
	release()
	release() // a second release does not count
	if h := v.State().Holds; h != 0 {
		t.Fatalf("holds %d after release, want 0", h)
	}
}

// A sleep that ends with its context takes its hold back and leaves no
// sleeper behind; the clock never moves back.
func TestVirtualSleepCancelled(t *testing.T) {
	v := NewVirtual(epoch)
	release := v.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Sleep(ctx, time.Minute) }()
	for v.State().Holds != 0 {
		<-v.Changed()
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled sleep returned nil")
	}
	if st := v.State(); st.Holds != 1 || !st.Next.IsZero() {
		t.Fatalf("after cancel: %+v, want the hold back and no sleeper", st)
	}
	release()
	if v.AdvanceTo(epoch.Add(-time.Hour)); !v.Now().Equal(epoch) {
		t.Fatal("the clock moved back")
	}
}

func TestRealSleepUntil(t *testing.T) {
	c := Real()
	if err := c.SleepUntil(context.Background(), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.SleepUntil(ctx, time.Now().Add(time.Hour)); err == nil {
		t.Fatal("a cancelled real sleep returned nil")
	}
}
