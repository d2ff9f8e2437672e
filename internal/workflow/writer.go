package workflow

// Group commit of run writes: every journal entry and state change a runner
// makes goes through one queue; a flusher takes whatever has queued while the
// previous transaction was committing and writes it all in one. Alone, a run
// pays one commit per write as before; under load, hundreds of runs share a
// commit.

import (
	"context"
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

type runWriter struct {
	ws   store.RunWriter
	in   chan *queuedWrite
	stop chan struct{}
	done chan struct{} // closed when the flushers have returned
	wg   sync.WaitGroup
	once sync.Once
}

type queuedWrite struct {
	w   store.RunWrite
	out chan error
}

func newRunWriter(ws store.RunWriter) *runWriter {
	r := &runWriter{ws: ws, in: make(chan *queuedWrite, maxBatch), stop: make(chan struct{}), done: make(chan struct{})}
	r.wg.Add(flushers)
	for range flushers {
		go r.loop()
	}
	go func() { r.wg.Wait(); close(r.done) }()
	return r
}

// write queues w and waits for its outcome (see store.RunWriter).
func (r *runWriter) write(w store.RunWrite) error {
	q := &queuedWrite{w: w, out: make(chan error, 1)}
	select {
	case r.in <- q:
	case <-r.stop:
		return errs.New(errs.CodeUnavailable, "workflow engine closed")
	}
	select {
	case err := <-q.out:
		return err
	case <-r.done:
		select {
		case err := <-q.out:
			return err
		default:
			return errs.New(errs.CodeUnavailable, "workflow engine closed")
		}
	}
}

func (r *runWriter) loop() {
	defer r.wg.Done()
	batch := make([]*queuedWrite, 0, maxBatch)
	for {
		select {
		case <-r.stop:
			r.drain()
			return
		case q := <-r.in:
			batch = append(batch[:0], q)
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case q := <-r.in:
				batch = append(batch, q)
			default:
				break gather
			}
		}
		r.flush(batch)
	}
}

// drain fails what is still queued once the writer stops.
func (r *runWriter) drain() {
	for {
		select {
		case q := <-r.in:
			q.out <- errs.New(errs.CodeUnavailable, "workflow engine closed")
		default:
			return
		}
	}
}

func (r *runWriter) flush(batch []*queuedWrite) {
	ws := make([]store.RunWrite, len(batch))
	for i, q := range batch {
		ws[i] = q.w
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	out, err := r.ws.WriteRuns(ctx, ws)
	cancel()
	for i, q := range batch {
		if err != nil {
			q.out <- err
		} else {
			q.out <- out[i]
		}
	}
}

func (r *runWriter) close() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
}
