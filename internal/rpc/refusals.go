package rpc

// Refusals in the log, aggregated: a refused call or handshake is cheap to
// send, and a line each would let one client fill the log (and the log
// ring the dashboard and voltro logs read) as fast as it can send.

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Aggregation of refusals in the log: the first few of each window one by
// one, then one line with the count of the rest.
const (
	refusalLogEvery = 10 * time.Second
	refusalLogBurst = 5
	// maxHeldReasons bounds the distinct reasons one summary counts; the
	// rest count as "other".
	maxHeldReasons = 16
	// maxLoggedField caps a logged field that a caller controls (a path,
	// a claimed sender, a reason naming one).
	maxLoggedField = 120
)

// refusalLog logs refusals at Warn: the first burst of each window one by
// one, the rest as one line with their count per reason when the window
// ends. A flood costs at most burst+1 lines per window, each of bounded
// size.
type refusalLog struct {
	log   *slog.Logger
	one   string // the message of a single refusal
	many  string // what the summary counts ("TLS handshakes")
	every time.Duration
	burst int

	mu     sync.Mutex
	window time.Time
	logged int
	held   map[string]int
	heldN  int
	last   string // remote of the last refusal held
	timer  *time.Timer
}

func newRefusalLog(log *slog.Logger, one, many string) *refusalLog {
	return &refusalLog{log: log, one: one, many: many, every: refusalLogEvery, burst: refusalLogBurst, held: map[string]int{}}
}

// refused logs or counts one refusal; attrs (key, value pairs) go on its
// own line only, and their values should be capped by the caller.
func (h *refusalLog) refused(remote, reason string, attrs ...any) {
	reason = capped(reason, maxLoggedField)
	remote = capped(remote, maxLoggedField)
	h.mu.Lock()
	now := time.Now()
	if h.timer == nil && now.Sub(h.window) >= h.every {
		h.window, h.logged = now, 0
	}
	if h.logged < h.burst {
		h.logged++
		h.mu.Unlock()
		h.log.Warn(h.one, append([]any{"reason", reason, "remote", remote}, attrs...)...)
		return
	}
	if _, ok := h.held[reason]; ok || len(h.held) < maxHeldReasons {
		h.held[reason]++
	} else {
		h.held["other"]++
	}
	h.heldN++
	h.last = remote
	if h.timer == nil {
		h.timer = time.AfterFunc(h.window.Add(h.every).Sub(now), h.flush)
	}
	h.mu.Unlock()
}

// flush logs the refusals held back, and starts a new window.
func (h *refusalLog) flush() {
	h.mu.Lock()
	n, held, last, every := h.heldN, h.held, h.last, h.every
	h.held, h.heldN, h.timer = map[string]int{}, 0, nil
	h.window, h.logged = time.Now(), 0
	h.mu.Unlock()
	if n == 0 {
		return
	}
	reasons := make([]string, 0, len(held))
	for r, k := range held {
		reasons = append(reasons, fmt.Sprintf("%s: %d", r, k))
	}
	sort.Strings(reasons)
	h.log.Warn(fmt.Sprintf("runner rpc: refused %d more %s in the last %s", n, h.many, every), "count", n, "reasons", strings.Join(reasons, "; "), "last_remote", last)
}

// capped cuts s to at most n bytes, at a character boundary (the log
// handler escapes what it holds).
func capped(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
