package inspect

// A brake on guessing the admin token: the admin routes of the inspect
// server and of voltro dashboard count wrong tokens per source and refuse
// a source that sent too many, for the rest of the window.

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Defaults of Guesses: 10 wrong tokens per source in a minute.
const (
	GuessWindow = time.Minute
	GuessMax    = 10
	// maxGuessSources bounds the sources remembered at once; past it an
	// arbitrary one is forgotten (a guesser spread over many addresses is
	// still held to GuessMax per address most of the time).
	maxGuessSources = 4096
)

// Guesses counts wrong admin tokens per source (an IPv4 address, an IPv6
// /64). A nil *Guesses limits nothing.
type Guesses struct {
	log    *slog.Logger
	window time.Duration
	max    int
	now    func() time.Time

	mu sync.Mutex
	m  map[netip.Prefix]*guessCount
}

type guessCount struct {
	start   time.Time
	wrong   int // wrong tokens in the window
	refused int // requests refused (429) in the window
}

// NewGuesses logs to log.
func NewGuesses(log *slog.Logger) *Guesses {
	if log == nil {
		log = slog.Default()
	}
	return &Guesses{log: log, window: GuessWindow, max: GuessMax, now: time.Now, m: map[netip.Prefix]*guessCount{}}
}

func source(r *http.Request) (netip.Prefix, string) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}, host
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p, p.String()
}

// current is src's count in the window now, logging the refusals of the
// window that ended (nil: none). Under g.mu.
func (g *Guesses) current(src netip.Prefix, name string, now time.Time) *guessCount {
	c := g.m[src]
	if c != nil && now.Sub(c.start) >= g.window {
		if c.refused > 0 {
			g.log.Warn("admin: refused admin requests from a source over its limit of wrong tokens", "source", name, "refused", c.refused, "wrong_tokens", c.wrong, "window", g.window.String())
		}
		delete(g.m, src)
		c = nil
	}
	return c
}

// Blocked reports whether r's source sent too many wrong tokens in the
// current window; it then counts the refusal and says how long until the
// window ends.
func (g *Guesses) Blocked(r *http.Request) (retry time.Duration, blocked bool) {
	if g == nil {
		return 0, false
	}
	src, name := source(r)
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.current(src, name, now)
	if c == nil || c.wrong < g.max {
		return 0, false
	}
	c.refused++
	return c.start.Add(g.window).Sub(now), true
}

// Wrong counts a wrong or missing admin token from r's source.
func (g *Guesses) Wrong(r *http.Request) {
	if g == nil {
		return
	}
	src, name := source(r)
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.current(src, name, now)
	if c == nil {
		if len(g.m) >= maxGuessSources {
			for k, old := range g.m {
				if now.Sub(old.start) >= g.window {
					delete(g.m, k)
				}
			}
			for k := range g.m {
				if len(g.m) < maxGuessSources/2 {
					break
				}
				delete(g.m, k)
			}
		}
		c = &guessCount{start: now}
		g.m[src] = c
		g.log.Warn("admin: a wrong admin token", "source", name, "path", capped(r.URL.Path, 120))
	}
	c.wrong++
	if c.wrong == g.max {
		g.log.Warn("admin: too many wrong admin tokens from one source; its admin requests are refused until its window ends", "source", name, "wrong_tokens", c.wrong, "window", g.window.String(), "until", c.start.Add(g.window).Format(time.RFC3339))
	}
}

// Refuse answers a blocked request: 429 with Retry-After.
func Refuse(w http.ResponseWriter, retry time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte(`{"error":"too many wrong admin tokens from this address: retry later"}` + "\n"))
}

func capped(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
