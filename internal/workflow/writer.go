package workflow

// Group commit of the runner's writes: every journal entry and state change
// (and, where the store can batch them, every start) goes through a queue; a
// flusher takes whatever has queued while the previous transaction was
// committing and writes it all in one. Alone, a run pays one commit per write
// as before; under load, hundreds of runs share a commit.

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

// groupCommit queues requests of type Q and writes them in batches with
// flush, which returns one outcome per request, or an error for the whole
// batch (then every request of the batch gets it).
type groupCommit[Q, R any] struct {
	flushFn func(ctx context.Context, qs []Q) ([]R, error)
	in      chan *queued[Q, R]
	stop    chan struct{}
	done    chan struct{} // closed when the flushers have returned
	wg      sync.WaitGroup
	once    sync.Once
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
	g := &groupCommit[Q, R]{flushFn: flush, in: make(chan *queued[Q, R], maxBatch), stop: make(chan struct{}), done: make(chan struct{})}
	g.wg.Add(flushers)
	for range flushers {
		go g.loop()
	}
	go func() { g.wg.Wait(); close(g.done) }()
	return g
}

var errWriterClosed = errs.New(errs.CodeUnavailable, "workflow engine closed")

// do queues q and waits for its outcome.
func (g *groupCommit[Q, R]) do(q Q) (R, error) {
	it := &queued[Q, R]{q: q, out: make(chan result[R], 1)}
	var zero R
	select {
	case g.in <- it:
	case <-g.stop:
		return zero, errWriterClosed
	}
	select {
	case res := <-it.out:
		return res.r, res.err
	case <-g.done:
		select {
		case res := <-it.out:
			return res.r, res.err
		default:
			return zero, errWriterClosed
		}
	}
}

func (g *groupCommit[Q, R]) loop() {
	defer g.wg.Done()
	batch := make([]*queued[Q, R], 0, maxBatch)
	for {
		select {
		case <-g.stop:
			g.drain()
			return
		case it := <-g.in:
			batch = append(batch[:0], it)
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case it := <-g.in:
				batch = append(batch, it)
			default:
				break gather
			}
		}
		g.flush(batch)
	}
}

// drain fails what is still queued once the writer stops.
func (g *groupCommit[Q, R]) drain() {
	for {
		select {
		case it := <-g.in:
			it.out <- result[R]{err: errWriterClosed}
		default:
			return
		}
	}
}

func (g *groupCommit[Q, R]) flush(batch []*queued[Q, R]) {
	qs := make([]Q, len(batch))
	for i, it := range batch {
		qs[i] = it.q
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	out, err := g.flushFn(ctx, qs)
	cancel()
	for i, it := range batch {
		if err != nil {
			it.out <- result[R]{err: err}
		} else {
			it.out <- result[R]{r: out[i]}
		}
	}
}

func (g *groupCommit[Q, R]) close() {
	g.once.Do(func() { close(g.stop) })
	<-g.done
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
	out, err := r.g.do(w)
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
	ws store.WorkflowStore
	g  *groupCommit[store.StartRequest, store.StartOutcome] // nil: no batching
}

func newStarter(ws store.WorkflowStore) *starter {
	s := &starter{ws: ws}
	if bs, ok := ws.(store.BatchStarter); ok {
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
	o, err := s.g.do(q)
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
