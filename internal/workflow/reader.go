package workflow

// Shared reads of run rows for Result. Every caller waiting on a run's end
// reads its row now and then: as a safety net where the end is handed over
// (a run executing here, or routed to its holder, which pushes it), as the
// only way where the run executes elsewhere. With thousands of runs awaited
// at once, one statement per read was most of what the database ran (see
// docs/galera.md, Throughput). A read asked for while fewer than
// readers are in flight goes out at once, with whatever else is queued;
// reads asked for meanwhile share the next one, a single statement for up
// to maxRead runs. Each caller keeps its own schedule and its own context.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

const (
	// readers is how many shared reads may be in flight at once.
	readers = 2
	// maxRead bounds the runs of one shared read.
	maxRead = 1000
	// oneByOneGiveUp is how many ids in a row may fail alone before the
	// rest of a failed batch share the last error.
	oneByOneGiveUp = 3
	// readTimeout bounds one shared read, lookups by primary key of rows
	// without their inputs: a database that does not answer within it is
	// an outage to the callers (errs.ErrUnavailable), which Result rides
	// out with its backoff.
	readTimeout = 10 * time.Second
)

type runRead struct {
	x   store.Execution
	err error
}

// runReader coalesces the reads of runs by id (store.Workflows's
// PollExecutions).
type runReader struct {
	get     func(ctx context.Context, ids []string) ([]store.Execution, error)
	timeout time.Duration // readTimeout; shorter in tests

	mu       sync.Mutex
	pending  map[string][]chan runRead // by run id: the callers waiting for it
	order    []string                  // pending's ids in the order first asked
	inFlight int
}

func newRunReader(get func(ctx context.Context, ids []string) ([]store.Execution, error)) *runReader {
	return &runReader{get: get, timeout: readTimeout, pending: map[string][]chan runRead{}}
}

// read returns run id's row as PollExecutions has it (without its input
// while it runs; errs.ErrNotFound for none), read together with the other
// runs asked for at the same time.
// It gives up when ctx ends; the shared read goes on for the others.
func (r *runReader) read(ctx context.Context, id string) (store.Execution, error) {
	if err := ctx.Err(); err != nil {
		return store.Execution{}, err
	}
	ch := make(chan runRead, 1)
	r.mu.Lock()
	if _, queued := r.pending[id]; !queued {
		r.order = append(r.order, id)
	}
	r.pending[id] = append(r.pending[id], ch)
	if r.inFlight < readers {
		r.inFlight++
		go r.drain()
	}
	r.mu.Unlock()
	select {
	case res := <-ch:
		return res.x, res.err
	case <-ctx.Done():
		return store.Execution{}, ctx.Err()
	}
}

// drain reads what is pending, in batches, until nothing is; it holds one
// of the in-flight slots throughout.
func (r *runReader) drain() {
	for {
		r.mu.Lock()
		n := min(len(r.order), maxRead)
		if n == 0 {
			r.inFlight--
			r.mu.Unlock()
			return
		}
		ids := r.order[:n:n]
		r.order = r.order[n:]
		waiting := make([][]chan runRead, n)
		for i, id := range ids {
			waiting[i] = r.pending[id]
			delete(r.pending, id)
		}
		r.mu.Unlock()
		found, err := r.call(ids)
		if err != nil && len(ids) > 1 && !errors.Is(err, errs.ErrUnavailable) {
			// Not an outage: the error may be one id's (the database
			// refusing a malformed one). Each id is read alone, so it
			// stays with the caller who asked for that id.
			found, err = r.oneByOne(ids), nil
		}
		for i, id := range ids {
			res := runRead{err: err}
			if err == nil {
				res = found[id]
			}
			for _, ch := range waiting[i] {
				ch <- res // buffered, one result each
			}
		}
	}
}

// oneByOne reads each of ids alone: every id gets its own row or error.
// An outage on the way, or the same failure for oneByOneGiveUp ids in a
// row (a missing grant, a store that panics), is every remaining id's
// error rather than a read each.
func (r *runReader) oneByOne(ids []string) map[string]runRead {
	found := make(map[string]runRead, len(ids))
	var stop error
	failed := 0
	for _, id := range ids {
		if stop != nil {
			found[id] = runRead{err: stop}
			continue
		}
		one, err := r.call([]string{id})
		if err == nil {
			found[id], failed = one[id], 0
			continue
		}
		found[id] = runRead{err: err}
		if failed++; errors.Is(err, errs.ErrUnavailable) || failed >= oneByOneGiveUp {
			stop = err
		}
	}
	return found
}

// call runs one shared read under r.timeout: the outcome of each of ids,
// its row or errs.ErrNotFound. A panic in the store becomes the read's
// error rather than a crash of the process.
func (r *runReader) call(ids []string) (found map[string]runRead, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			found, err = nil, errs.New(errs.CodeInternal, "reading runs: the store panicked: %v", p)
		}
	}()
	xs, err := r.get(ctx, ids)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, errs.ErrUnavailable) {
			err = errs.Wrap(errs.CodeUnavailable, err, "reading runs: the database did not answer within "+r.timeout.String())
		}
		return nil, err
	}
	found = make(map[string]runRead, len(ids))
	for _, x := range xs {
		found[x.ID] = runRead{x: x}
	}
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			found[id] = runRead{err: errs.New(errs.CodeNotFound, "no workflow execution %q", id)}
		}
	}
	return found, nil
}
