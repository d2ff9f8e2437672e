package bus

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/voltro/voltro/internal/cdc/delta"
)

// DefaultBuffer is the queue bound of a subscription when none is given.
const DefaultBuffer = 1024

// Bus is the fan-out point of one feed.
type Bus struct {
	mu     sync.RWMutex
	subs   map[string]map[*sub]struct{} // table -> subscriptions
	buffer int
	closed bool

	overflows atomic.Int64
}

// New makes a bus whose subscriptions queue at most buffer deltas.
func New(buffer int) *Bus {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	return &Bus{subs: map[string]map[*sub]struct{}{}, buffer: buffer}
}

// Overflows counts the resync signals sent because a subscriber fell behind.
func (b *Bus) Overflows() int64 { return b.overflows.Load() }

// Subscribe returns a channel of the deltas of table that pass filter. The
// channel is closed when ctx ends or the bus closes.
func (b *Bus) Subscribe(ctx context.Context, table string, filter delta.Filter) <-chan delta.Delta {
	s := &sub{
		table:  table,
		filter: filter,
		max:    b.buffer,
		out:    make(chan delta.Delta),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		bus:    b,
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		close(s.out)
		return s.out
	}
	m := b.subs[table]
	if m == nil {
		m = map[*sub]struct{}{}
		b.subs[table] = m
	}
	m[s] = struct{}{}
	b.mu.Unlock()
	go s.run(ctx)
	return s.out
}

// Tables lists the tables that have at least one subscriber.
func (b *Bus) Tables() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]string, 0, len(b.subs))
	for t, m := range b.subs {
		if len(m) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// Publish queues ds for every matching subscriber, in order. It never waits
// for a subscriber.
func (b *Bus) Publish(ds ...delta.Delta) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, d := range ds {
		for s := range b.subs[d.Table] {
			if s.filter.Match(d) {
				s.push(d)
			}
		}
	}
}

// ResyncAll sends a resync signal to every subscriber, e.g. after the
// transport lost its connection for a while.
func (b *Bus) ResyncAll(reason string) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for t, m := range b.subs {
		for s := range m {
			s.push(delta.NewResync(t, reason))
		}
	}
}

// Close ends every subscription.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for _, m := range b.subs {
		for s := range m {
			s.stop()
		}
	}
	b.subs = map[string]map[*sub]struct{}{}
}

func (b *Bus) remove(s *sub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.subs[s.table]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(b.subs, s.table)
		}
	}
}
