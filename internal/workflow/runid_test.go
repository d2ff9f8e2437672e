package workflow

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// Ids of later runs sort after those of earlier ones (the property the
// indexes keyed by run id rely on), have a form no keyed or child id has,
// and differ within one millisecond.
func TestRunIDsSortByStartTime(t *testing.T) {
	format := regexp.MustCompile(`^wf_[0-9a-f]{26}$`)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	prev := ""
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		at := t0.Add(time.Duration(i/10) * time.Millisecond) // ten per millisecond
		id := newRunID(at)
		if !format.MatchString(id) {
			t.Fatalf("id %q has not the form wf_ + 26 hex digits", id)
		}
		if !isPlainRunID(id) {
			t.Fatalf("id %q is not taken for a fresh run id", id)
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
	// No keyed run's id and no child's has that form.
	for _, id := range []string{ExecutionID("greet", "order-42"), newRunID(t0) + "/1", "wf_" + strings.Repeat("A", 26), newRunID(t0)[:28]} {
		if isPlainRunID(id) {
			t.Fatalf("%q is taken for a fresh run id", id)
		}
	}
	if a, b := newRunID(t0.Add(-365*24*time.Hour)), newRunID(t0); a >= b {
		t.Fatalf("a run started a year earlier got a larger id: %q >= %q", a, b)
	}
}
