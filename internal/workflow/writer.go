package workflow

// Group commit of the runner's writes: every journal entry and state change
// (and, where the store can batch them, every start) goes through a queue.
// A caller that finds fewer than `flushers` transactions in flight writes
// its request itself, at once, together with whatever has queued; callers
// that arrive while the transactions are busy queue up, and the next free
// flusher takes them all in one. Alone, a run pays one commit per write and
// no hand-over between goroutines; under load, hundreds of runs share a
// commit.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

const (
	// flushers is how many transactions may be in flight at once: two keep
	// the database busy while the next batch is being gathered.
	flushers = 2
	// maxBatch bounds one transaction (and its write-set on Galera).
	maxBatch = 256
	// writeTimeout bounds one flush; a database that stopped answering
	// fails the writes, and their messages are retried.
	writeTimeout = 10 * time.Second
)

// groupCommit writes requests of type Q in batches with flush, which returns
// one outcome per request, or an error for the whole batch (then every
// request of the batch gets it).
type groupCommit[Q, R any] struct {
	flushFn func(ctx context.Context, qs []Q) ([]R, error)

	mu       sync.Mutex
	pending  []*queued[Q, R]
	inFlight int  // flushes running
	closed   bool // no new requests
	idle     sync.Cond
}

type queued[Q, R any] struct {
	q   Q
	out chan result[R]
}

type result[R any] struct {
	r   R
	err error
}

func newGroupCommit[Q, R any](flush func(context.Context, []Q) ([]R, error)) *groupCommit[Q, R] {
	g := &groupCommit[Q, R]{flushFn: flush}
	g.idle.L = &g.mu
	return g
}

var errWriterClosed = errs.New(errs.CodeUnavailable, "workflow engine closed")

// do writes q, with others, and returns its outcome. A caller that writes
// the batch itself sees it through (others' outcomes depend on it); one
// that waits gives up when ctx ends, its request possibly written anyway.
func (g *groupCommit[Q, R]) do(ctx context.Context, q Q) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	it := &queued[Q, R]{q: q, out: make(chan result[R], 1)}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return zero, errWriterClosed
	}
	g.pending = append(g.pending, it)
	lead := g.inFlight < flushers
	var batch []*queued[Q, R]
	if lead {
		g.inFlight++
		batch = g.take()
	}
	g.mu.Unlock()
	if lead {
		g.flush(batch)
		// Ours is written: leave what queued meanwhile to a flusher of
		// its own rather than make this caller wait for it.
		g.mu.Lock()
		if len(g.pending) > 0 {
			go g.drain(g.take())
		} else {
			g.inFlight--
			g.idle.Broadcast()
		}
		g.mu.Unlock()
	}
	select {
	case res := <-it.out:
		return res.r, res.err
	case <-ctx.Done():
		return zero, errs.Wrap(errs.CodeDeadline, ctx.Err(), "waiting for a write queued behind others; it may still be written")
	}
}

// take removes up to maxBatch pending requests (g.mu held).
func (g *groupCommit[Q, R]) take() []*queued[Q, R] {
	n := min(len(g.pending), maxBatch)
	batch := g.pending[:n:n]
	g.pending = g.pending[n:]
	if len(g.pending) == 0 {
		g.pending = nil
	}
	return batch
}

// drain flushes batch and then whatever queued meanwhile, until nothing is
// pending; it holds one of the in-flight slots throughout.
func (g *groupCommit[Q, R]) drain(batch []*queued[Q, R]) {
	for {
		g.flush(batch)
		g.mu.Lock()
		if len(g.pending) == 0 {
			g.inFlight--
			g.idle.Broadcast()
			g.mu.Unlock()
			return
		}
		batch = g.take()
		g.mu.Unlock()
	}
}

func (g *groupCommit[Q, R]) flush(batch []*queued[Q, R]) {
	qs := make([]Q, len(batch))
	for i, it := range batch {
		qs[i] = it.q
	}
	out, timedOut, err := g.call(qs)
	if timedOut {
		// The database did not answer within writeTimeout: what queued
		// meanwhile fails now with the same error instead of waiting as
		// long again, batch after batch (a paused node would make close,
		// and so a shutdown, wait for each).
		g.mu.Lock()
		rest := g.pending
		g.pending = nil
		g.mu.Unlock()
		batch = append(batch, rest...)
	}
	for i, it := range batch {
		if err != nil {
			it.out <- result[R]{err: err}
		} else {
			it.out <- result[R]{r: out[i]}
		}
	}
}

// call runs flushFn under the write timeout. A panic or a short answer
// becomes the batch's error: every caller of the batch gets an outcome, and
// the flush slot is given back.
// timedOut reports a batch that failed because writeTimeout ran out.
func (g *groupCommit[Q, R]) call(qs []Q) (out []R, timedOut bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, errs.New(errs.CodeInternal, "group commit: the write panicked: %v", p)
		}
		timedOut = err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	}()
	out, err = g.flushFn(ctx, qs)
	if err == nil && len(out) != len(qs) {
		err = errs.New(errs.CodeInternal, "group commit: %d outcomes for %d writes", len(out), len(qs))
	}
	return out, false, err
}

// close refuses new requests and waits until what was accepted is written.
func (g *groupCommit[Q, R]) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for g.inFlight > 0 || len(g.pending) > 0 {
		g.idle.Wait()
	}
}

// runWriter is the group commit of journal entries and state changes: an
// outcome per write (see store.RunWriter).
type runWriter struct {
	g *groupCommit[store.RunWrite, error]
}

func newRunWriter(ws store.RunWriter) *runWriter {
	return &runWriter{g: newGroupCommit(ws.WriteRuns)}
}

// write queues w and waits for its outcome.
func (r *runWriter) write(w store.RunWrite) error {
	out, err := r.g.do(context.Background(), w)
	if err != nil {
		return err
	}
	return out
}

func (r *runWriter) close() { r.g.close() }

// starter writes starts: in batches through a group commit when the store
// can (store.BatchStarter), one transaction each otherwise. A batch that
// fails as a whole is retried one start at a time, so one start the batch
// could not take (a duplicate the store reports as an error, say) does not
// fail the others; one the database did not answer fails them all at once.
type starter struct {
	ws store.Workflows
	g  *groupCommit[store.StartRequest, store.StartOutcome] // nil: no batching
}

func newStarter(ws store.Workflows, bs store.BatchStarter) *starter {
	s := &starter{ws: ws}
	if bs != nil {
		s.g = newGroupCommit(func(ctx context.Context, qs []store.StartRequest) ([]store.StartOutcome, error) {
			if len(qs) > 1 {
				out, err := bs.StartExecutions(ctx, qs)
				if err == nil {
					return out, nil
				}
				if outage(err) {
					return nil, err // one by one would only wait longer
				}
			}
			out := make([]store.StartOutcome, len(qs))
			for i, q := range qs {
				out[i] = s.one(ctx, q)
			}
			return out, nil
		})
	}
	return s
}

// outage reports an error that says the database did not answer, as
// opposed to one about what the batch held.
func outage(err error) bool {
	return errors.Is(err, errs.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

func (s *starter) one(ctx context.Context, q store.StartRequest) store.StartOutcome {
	var o store.StartOutcome
	o.Stored, o.Existing, o.Result, o.Err = s.ws.StartExecution(ctx, q.Exec, q.Context, q.Message, q.Claim)
	return o
}

// start writes one start, with the others queued beside it.
func (s *starter) start(ctx context.Context, q store.StartRequest) store.StartOutcome {
	if s.g == nil {
		return s.one(ctx, q)
	}
	o, err := s.g.do(ctx, q)
	if err != nil {
		o.Err = err
	}
	return o
}

func (s *starter) close() {
	if s.g != nil {
		s.g.close()
	}
}
