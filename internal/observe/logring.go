package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultRingSize is how many records an instance keeps when not told.
const DefaultRingSize = 2000

// DefaultRingBytes bounds the records a ring keeps by their size as well
// (an estimate of their JSON): a few records with large fields must not
// hold much memory, nor push every other record out.
const DefaultRingBytes = 4 << 20

// maxKeptString cuts a string (message or attribute) kept in the ring.
const maxKeptString = 16 << 10

// bootMax bounds the records pinned while an instance boots.
const bootMax = 256

// Record is one kept log record, as served by the inspect endpoint.
type Record struct {
	Seq     uint64         `json:"seq"`
	Time    time.Time      `json:"time"`
	Level   string         `json:"level"`
	Msg     string         `json:"msg"`
	Attrs   map[string]any `json:"attrs,omitempty"`
	Replica string         `json:"replicaId"`
	// Boot marks a record logged while the instance started (resolved
	// dialect, lock mode, CDC flavor, runner identity): those are kept
	// apart, so they are still served after the ring has turned over.
	Boot bool `json:"boot,omitempty"`
}

// LevelOf parses a record's level name back (unknown names are Info).
func LevelOf(name string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(name)); err != nil {
		return slog.LevelInfo
	}
	return l
}

// Ring keeps the most recent records of one instance, oldest evicted first,
// up to a number of records and DefaultRingBytes of them.
type Ring struct {
	replica  string
	min      slog.Level
	maxBytes int

	mu       sync.Mutex
	buf      []Record
	sizes    []int // of buf's records (recordSize)
	head     int   // slot of the oldest record
	n        int   // records held
	bytes    int   // their sizes' sum
	seq      uint64
	boot     []Record // Info and above, pinned until EndBoot, at most bootMax
	bootDone bool
}

// NewRing keeps up to size records at level min and above (size <= 0 takes
// DefaultRingSize), and at most DefaultRingBytes of them.
func NewRing(replica string, size int, min slog.Level) *Ring {
	if size <= 0 {
		size = DefaultRingSize
	}
	return &Ring{replica: replica, min: min, maxBytes: DefaultRingBytes, buf: make([]Record, size), sizes: make([]int, size)}
}

// Replica is the instance the ring belongs to.
func (r *Ring) Replica() string { return r.replica }

// Cap is how many records the ring keeps at most.
func (r *Ring) Cap() int { return len(r.buf) }

// Len is how many records the ring holds now.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Bytes is the estimated size of the records the ring holds now.
func (r *Ring) Bytes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}

func (r *Ring) add(rec Record) {
	size := recordSize(rec)
	r.mu.Lock()
	r.seq++
	rec.Seq = r.seq
	rec.Replica = r.replica
	if !r.bootDone && len(r.boot) < bootMax && LevelOf(rec.Level) >= slog.LevelInfo {
		rec.Boot = true
		r.boot = append(r.boot, rec)
	}
	for r.n > 0 && (r.n == len(r.buf) || r.bytes+size > r.maxBytes) {
		r.bytes -= r.sizes[r.head]
		r.buf[r.head], r.sizes[r.head] = Record{}, 0
		r.head = (r.head + 1) % len(r.buf)
		r.n--
	}
	slot := (r.head + r.n) % len(r.buf)
	r.buf[slot], r.sizes[slot] = rec, size
	r.n++
	r.bytes += size
	r.mu.Unlock()
}

// recordSize estimates rec's size as served (JSON), for the byte bound.
func recordSize(rec Record) int {
	n := 96 + len(rec.Level) + len(rec.Msg)
	for k, v := range rec.Attrs {
		n += len(k) + 8
		switch v := v.(type) {
		case string:
			n += len(v)
		case json.RawMessage:
			n += len(v)
		default:
			n += 24
		}
	}
	return n
}

// cut bounds a string kept in the ring.
func cut(s string) string {
	if len(s) <= maxKeptString {
		return s
	}
	n := maxKeptString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// EndBoot ends the boot phase: later records are no longer pinned.
func (r *Ring) EndBoot() {
	r.mu.Lock()
	r.bootDone = true
	r.mu.Unlock()
}

// TailWithBoot is Tail preceded by the pinned boot records that fell out of
// the tail (evicted, or older than its n records).
func (r *Ring) TailWithBoot(n int, min slog.Level) []Record {
	tail := r.Tail(n, min)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for _, b := range r.boot {
		if (len(tail) == 0 || b.Seq < tail[0].Seq) && LevelOf(b.Level) >= min {
			out = append(out, b)
		}
	}
	return append(out, tail...)
}

// Tail returns the last n records at level min or above, oldest first
// (n <= 0: all of them).
func (r *Ring) Tail(n int, min slog.Level) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	size := r.n
	if n <= 0 || n > size {
		n = size
	}
	out := make([]Record, 0, n)
	// walk back from the newest record, then reverse
	for i := size - 1; i >= 0 && len(out) < n; i-- {
		rec := r.buf[(r.head+i)%len(r.buf)]
		if LevelOf(rec.Level) >= min {
			out = append(out, rec)
		}
	}
	slices.Reverse(out)
	return out
}

// Merge interleaves the records of several instances by time (ties by
// replica, then sequence), keeping boot records and the last tail of the
// others (tail <= 0: all).
func Merge(tail int, lists ...[]Record) []Record {
	out := merged(lists)
	if tail <= 0 {
		return out
	}
	cut, n := len(out), 0
	for cut > 0 && n < tail {
		cut--
		if !out[cut].Boot {
			n++
		}
	}
	kept := make([]Record, 0, tail+len(out[:cut]))
	for _, rec := range out[:cut] {
		if rec.Boot {
			kept = append(kept, rec)
		}
	}
	return append(kept, out[cut:]...)
}

// MergeTail interleaves like Merge and keeps the last tail records, boot
// records or not (tail <= 0: all).
func MergeTail(tail int, lists ...[]Record) []Record {
	out := merged(lists)
	if tail > 0 && len(out) > tail {
		out = out[len(out)-tail:]
	}
	return out
}

// merged is every record of lists, by time, then replica, then sequence.
func merged(lists [][]Record) []Record {
	var out []Record
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.SortStableFunc(out, func(a, b Record) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		if c := strings.Compare(a.Replica, b.Replica); c != 0 {
			return c
		}
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out
}

// Handler wraps an app's slog.Handler: every record at the ring's level or
// above is kept in the ring, and only what the wrapped handler enables is
// passed on. The ring therefore keeps Debug records (shard moves, schedule
// ticks) of an app that prints Info.
type Handler struct {
	inner  slog.Handler
	ring   *Ring
	attrs  []slog.Attr // from WithAttrs, keys already prefixed by their groups
	prefix string      // open groups, "a.b."
}

// NewHandler wraps inner so that ring keeps what passes through.
func NewHandler(inner slog.Handler, ring *Ring) *Handler {
	return &Handler{inner: inner, ring: ring}
}

// Ring is the ring the handler writes to.
func (h *Handler) Ring() *Ring { return h.ring }

// Enabled is true for what the ring keeps or the wrapped handler prints.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.ring.min || h.inner.Enabled(ctx, l)
}

// Handle keeps the record and passes it on if the wrapped handler wants it.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= h.ring.min {
		at := r.Time
		if at.IsZero() {
			at = time.Now()
		}
		rec := Record{Time: at, Level: r.Level.String(), Msg: cut(r.Message)}
		if len(h.attrs) > 0 || r.NumAttrs() > 0 {
			rec.Attrs = make(map[string]any, len(h.attrs)+r.NumAttrs())
			for _, a := range h.attrs {
				flatten(rec.Attrs, "", a)
			}
			r.Attrs(func(a slog.Attr) bool {
				flatten(rec.Attrs, h.prefix, a)
				return true
			})
		}
		h.ring.add(rec)
	}
	if h.inner.Enabled(ctx, r.Level) {
		return h.inner.Handle(ctx, r)
	}
	return nil
}

// WithAttrs adds attributes to both the ring's view and the wrapped handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := *h
	c.inner = h.inner.WithAttrs(as)
	c.attrs = slices.Clip(h.attrs)
	for _, a := range as {
		a.Key = h.prefix + a.Key
		c.attrs = append(c.attrs, a)
	}
	return &c
}

// WithGroup opens a group in both views.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.inner = h.inner.WithGroup(name)
	c.prefix = h.prefix + name + "."
	return &c
}

// flatten stores a (resolved) attribute under its dotted key.
func flatten(into map[string]any, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			flatten(into, p, g)
		}
		return
	}
	if a.Key == "" {
		return
	}
	into[prefix+a.Key] = plain(v)
}

// plain turns a value into something that encodes as JSON and no longer
// refers to the caller's memory.
func plain(v slog.Value) any {
	switch v.Kind() {
	case slog.KindString:
		return cut(v.String())
	case slog.KindInt64:
		return v.Int64()
	case slog.KindUint64:
		return v.Uint64()
	case slog.KindFloat64:
		f := v.Float64()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprint(f)
		}
		return f
	case slog.KindBool:
		return v.Bool()
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	}
	switch x := v.Any().(type) {
	case nil:
		return nil
	case error:
		return cut(x.Error())
	case fmt.Stringer:
		return cut(x.String())
	case json.Marshaler, []string, []any, map[string]any, map[string]string:
		if b, err := json.Marshal(x); err == nil && len(b) <= maxKeptString {
			return json.RawMessage(b)
		}
	}
	if b, err := json.Marshal(v.Any()); err == nil && len(b) <= 4096 {
		return json.RawMessage(b)
	}
	return cut(fmt.Sprint(v.Any()))
}
