package workflow

// Introspection writes: runs, step attempts and events go to the _voltro_
// tables in the background, fire-and-forget, a batch per transaction. A full
// buffer drops records (counted) rather than slowing a workflow down;
// nothing reads them back for correctness.

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltro/voltro/internal/store"
)

const (
	// introLinger is the pause after a flush before the next one. The rows
	// need not be immediate, and gathering what arrives meanwhile turns
	// thousands of records a second into a few dozen commits that do not
	// compete with the durable path's (journal, state) for fsyncs. An idle
	// writer flushes the first record at once.
	introLinger = 15 * time.Millisecond
	// introFlushAt cuts the linger short: a buffer this full is flushed at
	// once, keeping batches (and their transactions) moderate.
	introFlushAt = 1000
	// introBufferMax bounds the records waiting for a flush; beyond it they
	// are dropped and counted.
	introBufferMax = 8192
	// introWriteTimeout bounds one batch's write.
	introWriteTimeout = 10 * time.Second
	// introCloseWait bounds how long close waits for the writer. The
	// context does not reach every network read (a MySQL COMMIT to a
	// database that stopped answering blocks until the connection dies),
	// and introspection is best effort, so shutdown does not wait on it.
	introCloseWait = 2 * time.Second
)

type recorder struct {
	in      store.Introspection
	replica string
	runner  string // this engine's runner address, for event rows
	now     func() time.Time
	log     *slog.Logger

	mu     sync.Mutex
	buf    store.IntrospectionBatch // waiting for the next flush
	closed bool

	spare store.IntrospectionBatch // the last flushed batch, emptied, for reuse (loop only)

	wake    chan struct{} // a record arrived in an empty buffer
	full    chan struct{} // the buffer reached introFlushAt
	stop    chan struct{} // closed by close
	dropped atomic.Int64
	failed  atomic.Int64 // batches lost to failed writes
	done    chan struct{}
	once    sync.Once
}

func newRecorder(in store.Introspection, replica string, log *slog.Logger) *recorder {
	r := &recorder{in: in, replica: replica, log: log, now: time.Now,
		wake: make(chan struct{}, 1), full: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if in == nil {
		close(r.done)
		return r
	}
	go r.loop()
	return r
}

// loop flushes whatever is buffered, lingers, and flushes again until a
// flush finds nothing; then it waits for the next record.
func (r *recorder) loop() {
	defer close(r.done)
	linger := time.NewTimer(introLinger)
	linger.Stop()
	for {
		select {
		case <-r.wake:
		case <-r.stop:
			r.flush()
			return
		}
		for r.flush() {
			linger.Reset(introLinger)
			select {
			case <-linger.C:
			case <-r.full:
				linger.Stop()
			case <-r.stop:
				linger.Stop()
				r.flush()
				return
			}
		}
	}
}

// flush writes everything buffered in one Record call and reports whether
// there was anything.
func (r *recorder) flush() bool {
	r.mu.Lock()
	b := r.buf
	r.buf = r.spare
	r.mu.Unlock()
	r.spare = store.IntrospectionBatch{}
	n := b.Len()
	if n == 0 {
		r.recycle(b)
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), introWriteTimeout)
	err := r.in.Record(ctx, b)
	cancel()
	if err != nil && r.failed.Add(1)%100 == 1 {
		r.log.Debug("workflow introspection write failed (ignored)", "records", n, "failed_batches", r.failed.Load(), "err", err)
	}
	r.recycle(b)
	return true
}

// recycle empties b (dropping its references) and keeps it as the spare.
func (r *recorder) recycle(b store.IntrospectionBatch) {
	clear(b.Runs)
	clear(b.Steps)
	clear(b.Events)
	b.Runs, b.Steps, b.Events = b.Runs[:0], b.Steps[:0], b.Events[:0]
	r.spare = b
}

// admit takes the buffer's lock for one more record and reports true, or
// counts the record dropped and reports false (lock not held) when the
// buffer is full or the writer closed. After appending, call added.
func (r *recorder) admit() bool {
	if r.in == nil {
		return false
	}
	r.mu.Lock()
	if r.closed || r.buf.Len() >= introBufferMax {
		r.mu.Unlock()
		r.dropped.Add(1)
		return false
	}
	return true
}

// added releases the lock admit took and wakes the writer when the record
// was the first in the buffer, or cuts its linger short at introFlushAt.
func (r *recorder) added() {
	n := r.buf.Len()
	r.mu.Unlock()
	switch n {
	case 1:
		signal(r.wake)
	case introFlushAt:
		signal(r.full)
	}
}

// signal sends on a one-slot channel unless a signal is pending already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// close flushes what is buffered and stops the writer; later records are
// dropped. It waits for the writer at most introCloseWait: a write stuck on
// a database that does not answer is abandoned (logged), not waited for.
func (r *recorder) close() {
	r.once.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		close(r.stop)
	})
	t := time.NewTimer(introCloseWait)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		r.log.Warn("workflow introspection: the last write did not finish; closing without it", "waited", introCloseWait)
	}
}

func (r *recorder) event(id, kind, detail string) {
	e := store.EventRecord{ExecutionID: id, At: r.now(), Kind: kind, Detail: detail, ReplicaID: r.replica, Runner: r.runner}
	if r.admit() {
		r.buf.Events = append(r.buf.Events, e)
		r.added()
	}
}

func (w *Engine) introEvent(id, kind, detail string) { w.intro.event(id, kind, detail) }

func (w *Engine) introRun(x store.Execution, status store.ExecStatus, errText string) {
	now := w.clk.Now()
	rec := store.RunRecord{ExecutionID: x.ID, Name: x.Name, Status: status, ReplicaID: w.intro.replica, Runner: w.e.Address(), ParentID: x.ParentID, Error: errText, StartedAt: x.CreatedAt, UpdatedAt: now}
	if status.Terminal() {
		rec.FinishedAt = now
	}
	if w.intro.admit() {
		w.intro.buf.Runs = append(w.intro.buf.Runs, rec)
		w.intro.added()
	}
}

func (w *Engine) introStep(c *Context, seq int, name string, kind store.JournalKind, attempt int, status, errText string, started, finished time.Time) {
	rec := store.StepRecord{ExecutionID: c.exec.ID, Seq: seq, Name: name, Kind: kind, Attempt: attempt, Status: status, Runner: c.fence.Owner, ReplicaID: w.intro.replica, Error: errText, StartedAt: started, FinishedAt: finished, Trace: c.trace()}
	if w.intro.admit() {
		w.intro.buf.Steps = append(w.intro.buf.Steps, rec)
		w.intro.added()
	}
}

// Dropped counts introspection records dropped under load.
func (w *Engine) Dropped() int64 { return w.intro.dropped.Load() }
