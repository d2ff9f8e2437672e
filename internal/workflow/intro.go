package workflow

// Introspection writes: runs, step attempts and events go to the _voltro_
// tables in the background, fire-and-forget. A full buffer drops records
// (counted) rather than slowing a workflow down; nothing reads them back for
// correctness.

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltro/voltro/internal/store"
)

type recorder struct {
	in      store.WorkflowIntrospection
	replica string
	runner  string // this engine's runner address, for event rows
	log     *slog.Logger
	ch      chan func(context.Context) error
	dropped atomic.Int64
	failed  atomic.Int64
	done    chan struct{}
	once    sync.Once
}

func newRecorder(in store.WorkflowIntrospection, replica string, log *slog.Logger) *recorder {
	r := &recorder{in: in, replica: replica, log: log, ch: make(chan func(context.Context) error, 4096), done: make(chan struct{})}
	if in == nil {
		close(r.done)
		return r
	}
	go r.loop()
	return r
}

func (r *recorder) loop() {
	defer close(r.done)
	for f := range r.ch {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := f(ctx); err != nil && r.failed.Add(1)%100 == 1 {
			r.log.Debug("workflow introspection write failed (ignored)", "err", err)
		}
		cancel()
	}
}

func (r *recorder) put(f func(context.Context) error) {
	if r.in == nil {
		return
	}
	select {
	case r.ch <- f:
	default:
		r.dropped.Add(1)
	}
}

func (r *recorder) close() {
	r.once.Do(func() {
		if r.in != nil {
			close(r.ch)
		}
	})
	<-r.done
}

func (r *recorder) event(id, kind, detail string) {
	at := time.Now()
	r.put(func(ctx context.Context) error {
		return r.in.RecordEvent(ctx, store.EventRecord{ExecutionID: id, At: at, Kind: kind, Detail: detail, ReplicaID: r.replica, Runner: r.runner})
	})
}

func (w *Engine) introEvent(id, kind, detail string) { w.intro.event(id, kind, detail) }

func (w *Engine) introRun(x store.Execution, status store.ExecStatus, errText string) {
	now := time.Now()
	rec := store.RunRecord{ExecutionID: x.ID, Name: x.Name, Status: status, ReplicaID: w.intro.replica, Runner: w.e.Address(), ParentID: x.ParentID, Error: errText, StartedAt: x.CreatedAt, UpdatedAt: now}
	if status.Terminal() {
		rec.FinishedAt = now
	}
	w.intro.put(func(ctx context.Context) error { return w.intro.in.RecordRun(ctx, rec) })
}

func (w *Engine) introStep(c *Context, seq int, name string, kind store.JournalKind, attempt int, status, errText string, started, finished time.Time) {
	rec := store.StepRecord{ExecutionID: c.exec.ID, Seq: seq, Name: name, Kind: kind, Attempt: attempt, Status: status, Runner: c.fence.Owner, ReplicaID: w.intro.replica, Error: errText, StartedAt: started, FinishedAt: finished, Trace: c.trace()}
	w.intro.put(func(ctx context.Context) error { return w.intro.in.RecordStep(ctx, rec) })
}

// Dropped counts introspection records dropped under load.
func (w *Engine) Dropped() int64 { return w.intro.dropped.Load() }
