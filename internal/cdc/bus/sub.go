// One subscription: a bounded queue filled by publishers and drained into the
// subscriber's channel by its own goroutine.

package bus

import (
	"context"
	"sync"

	"github.com/voltro/voltro/internal/cdc/delta"
)

type sub struct {
	table  string
	filter delta.Filter
	max    int
	bus    *Bus

	mu       sync.Mutex
	queue    []delta.Delta
	stopOnce sync.Once

	out  chan delta.Delta
	wake chan struct{}
	done chan struct{}
}

// push appends d; on overflow the queue is replaced by one resync signal, so
// the subscriber re-reads instead of the publisher waiting.
func (s *sub) push(d delta.Delta) {
	s.mu.Lock()
	if len(s.queue) >= s.max {
		if len(s.queue) > 0 && s.queue[0].Op == delta.Resync && len(s.queue) == 1 {
			s.mu.Unlock()
			return
		}
		clear(s.queue)
		s.queue = append(s.queue[:0], delta.NewResync(s.table, "subscriber fell behind its buffer"))
		s.bus.overflows.Add(1)
	} else if d.Op == delta.Resync && len(s.queue) > 0 && s.queue[len(s.queue)-1].Op == delta.Resync {
		// two resyncs in a row say nothing more than one
	} else {
		s.queue = append(s.queue, d)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sub) stop() { s.stopOnce.Do(func() { close(s.done) }) }

func (s *sub) run(ctx context.Context) {
	defer close(s.out)
	defer s.bus.remove(s)
	for {
		s.mu.Lock()
		var (
			d  delta.Delta
			ok bool
		)
		if len(s.queue) > 0 {
			d, ok = s.queue[0], true
			s.queue[0] = delta.Delta{}
			s.queue = s.queue[1:]
			if len(s.queue) == 0 {
				s.queue = nil
			}
		}
		s.mu.Unlock()
		if !ok {
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		}
		select {
		case s.out <- d:
		case <-ctx.Done():
			return
		case <-s.done:
			return
		}
	}
}
