package testwait

import (
	"testing"
	"time"
)

// Poll is the pause between two looks at the condition.
const Poll = 20 * time.Millisecond

// For polls cond until it returns true, or fails t once within has passed,
// saying what it waited for.
func For(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(Poll)
	}
}
