package workflow

import (
	"regexp"
	"testing"
	"time"
)

// Ids of later runs sort after those of earlier ones (the property the
// indexes keyed by run id rely on), keep the public format, and differ
// within one millisecond.
func TestRunIDsSortByStartTime(t *testing.T) {
	format := regexp.MustCompile(`^wf_[0-9a-f]{24}$`)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	prev := ""
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		at := t0.Add(time.Duration(i/10) * time.Millisecond) // ten per millisecond
		id := newRunID(at)
		if !format.MatchString(id) {
			t.Fatalf("id %q has not the form wf_ + 24 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("id %q repeated", id)
		}
		seen[id] = true
		if i%10 == 0 && prev != "" && id[:15] <= prev[:15] {
			t.Fatalf("id %q of a later millisecond does not sort after %q", id, prev)
		}
		prev = id
	}
	if a, b := newRunID(t0.Add(-365*24*time.Hour)), newRunID(t0); a >= b {
		t.Fatalf("a run started a year earlier got a larger id: %q >= %q", a, b)
	}
}
