package inspect

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A source over the limit is refused until its window ends, then counted
// afresh, and the refusals of the ended window are logged with their
// count; another source (another IPv6 /64) is not affected.
func TestGuessesWindow(t *testing.T) {
	var logs bytes.Buffer
	g := NewGuesses(slog.New(slog.NewTextHandler(&logs, nil)))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g.now = func() time.Time { return now }
	r := httptest.NewRequest("POST", "/x", nil)
	r.RemoteAddr = "[2001:db8::1]:5000"
	other := httptest.NewRequest("POST", "/x", nil)
	other.RemoteAddr = "[2001:db8:0:1::1]:5000"
	same := httptest.NewRequest("POST", "/x", nil)
	same.RemoteAddr = "[2001:db8::ffff]:6000"
	for range GuessMax {
		if _, b := g.Blocked(r); b {
			t.Fatal("blocked before the limit")
		}
		g.Wrong(r)
	}
	if retry, b := g.Blocked(same); !b || retry != GuessWindow {
		t.Fatalf("the same /64 after %d wrong tokens: %v %v", GuessMax, b, retry)
	}
	if _, b := g.Blocked(other); b {
		t.Fatal("another /64 is blocked")
	}
	now = now.Add(GuessWindow)
	if _, b := g.Blocked(r); b {
		t.Fatal("still blocked after the window")
	}
	if !strings.Contains(logs.String(), "refused=1 wrong_tokens=10") {
		t.Fatalf("the ended window's refusals are not logged:\n%s", logs.String())
	}
	var nilG *Guesses
	if _, b := nilG.Blocked(r); b {
		t.Fatal("a nil Guesses blocks")
	}
	nilG.Wrong(r)
}
