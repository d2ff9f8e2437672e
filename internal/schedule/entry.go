// The per-schedule state a replica keeps: resolved coordination, local runs
// in flight and the queue buffer, and outcome counters.

package schedule

import (
	"sync"
)

type entry struct {
	compiled
	coord Coordination // resolved: never "" and never cluster without an engine

	mu       sync.Mutex
	inflight int               // runs of this schedule executing on this replica
	buffered bool              // this replica holds the one queued tick
	counts   map[Outcome]int64 // outcomes recorded by this replica
	wake     chan struct{}     // poked when a local run ends
}

func (e *entry) count(o Outcome, n int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[Outcome]int64{}
	}
	e.counts[o] += n
}

func (e *entry) stats() map[Outcome]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[Outcome]int64, len(e.counts))
	for o, n := range e.counts {
		out[o] = n
	}
	return out
}

// live is the number of rows this replica must keep heart-beating.
func (e *entry) live() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.inflight
	if e.buffered {
		n++
	}
	return n
}

// ended notes the end of a local run and wakes a waiting queued tick.
func (e *entry) ended() {
	e.mu.Lock()
	e.inflight--
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
