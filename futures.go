package voltro

// Futures: what a run starts now and waits for later, or races — Go steps,
// children, timers and signals — with Select and All over them.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/workflow"
)

// Future is an operation a run started and may wait for, with a result of
// type T: a Go step, a child run (StartChild), a timer or a signal. Like
// every operation it has a place in the run's journal, taken when it is
// created, so create futures in the same order on every replay.
type Future[T any] struct {
	f      *workflow.Future
	err    error // set for a future that failed before it started
	decode string
}

// Selectable is what Select takes: every *Future[T], whatever its T.
type Selectable interface {
	internalFuture() *workflow.Future
}

func (f *Future[T]) internalFuture() *workflow.Future { return f.f }

// Get returns the future's result. A Go step of the current replay is
// waited for; a timer, signal or child that has not finished suspends the
// run until it has (durably, on whichever instance holds the run then); a
// finished future returns at once, on every replay.
func (f *Future[T]) Get(wc *WorkflowContext) (T, error) {
	var zero T
	if f.err != nil {
		return zero, f.err
	}
	b, err := f.f.Get()
	if err != nil {
		return zero, err
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return zero, errs.Wrap(errs.CodeDecode, err, f.decode+": cannot decode result")
	}
	return v, nil
}

// Done reports whether the future has finished, without waiting.
func (f *Future[T]) Done() bool { return f.err != nil || f.f.Done() }

// Go starts fn as a step that runs beside the workflow code and returns its
// future. It is a Step in every other way: its outcome is journaled (as
// soon as it is known, so a crash later does not run it again) and replays
// return it; retries follow opts. At most the workflow's WithMaxParallel Go
// steps of one run run at once. A Go step still running when the run ends
// is cancelled; one running when the run suspends finishes first.
func Go[T any](wc *WorkflowContext, name string, fn func(ctx context.Context) (T, error), opts ...StepOption) *Future[T] {
	var p RetryPolicy
	for _, o := range opts {
		o(&p)
	}
	f := wc.c.Go(name, func(ctx context.Context) ([]byte, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	}, p.internal())
	return &Future[T]{f: f, decode: "step " + name}
}

// StartChild starts w as a child of the current run (once) and returns the
// future of its result, without waiting: children started this way run
// side by side. A child the run never waits for follows its parent-close
// policy when the run ends.
func StartChild[I, O any](wc *WorkflowContext, w *Workflow[I, O], in I, opts ...ChildOption) *Future[O] {
	var o childOptions
	for _, f := range opts {
		f(&o)
	}
	decode := "child " + w.name
	switch o.ParentClose {
	case "", workflow.ParentCloseTerminate, workflow.ParentCloseRequestCancel, workflow.ParentCloseAbandon:
	default:
		return &Future[O]{err: errs.New(errs.CodeInvalidArgument, "parent-close policy %q: use terminate, request-cancel or abandon", o.ParentClose), decode: decode}
	}
	input, err := json.Marshal(in)
	if err != nil {
		return &Future[O]{err: errs.Wrap(errs.CodeInvalidArgument, err, "child input"), decode: decode}
	}
	return &Future[O]{f: wc.c.StartChild(w.name, input, o.ChildOptions), decode: decode}
}

// Timer returns a future that finishes d from now: a durable timer, as
// Sleep's, that fires on whichever instance holds the run.
func Timer(wc *WorkflowContext, d time.Duration) *Future[struct{}] {
	return &Future[struct{}]{f: wc.c.Timer(d), decode: "timer"}
}

// SignalFuture returns the future of the named signal's payload, as
// AwaitSignal would return it, without waiting. Race it against a Timer
// with Select for a wait with a deadline.
func SignalFuture[T any](wc *WorkflowContext, name string) *Future[T] {
	return &Future[T]{f: wc.c.SignalFuture(name), decode: "signal " + name}
}

// Select returns the index in fs of a future that has finished: live, the
// first of fs finished already, else the first to finish (a Go step of this
// replay, or a timer, signal or child, for which the run suspends); on
// replay, the index the live run returned, whatever has finished since.
// Then Get the chosen future for its result.
func Select(wc *WorkflowContext, fs ...Selectable) int {
	in := make([]*workflow.Future, 0, len(fs))
	for i, f := range fs {
		if x, ok := f.(interface{ failedEarly() bool }); ok && x.failedEarly() {
			return i
		}
		in = append(in, f.internalFuture())
	}
	return wc.c.Select(in...)
}

func (f *Future[T]) failedEarly() bool { return f.err != nil }

// All waits for every future and returns their results in the order given;
// the first error, in that order, ends it.
func All[T any](wc *WorkflowContext, fs ...*Future[T]) ([]T, error) {
	out := make([]T, len(fs))
	for i, f := range fs {
		v, err := f.Get(wc)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
