package workflow

// Queues on this instance: a dequeuer per queue it registered or started a
// run on. A dequeuer gives queued runs their slots (store.Dequeue, which
// the store serializes per queue across the fleet) when poked — a queued
// start here, a run of the queue ending here — and at least every
// queuePoll, for the starts and ends of other instances and for runs whose
// StartAt or rate window comes due. Any instance may dequeue any queue: the
// limits are the store's, and the dequeued run's start message goes to its
// shard's holder like any other.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// queuePoll is how often an idle dequeuer looks at its queue.
const queuePoll = time.Second

// dequeueBatch caps one Dequeue: a long backlog is handed out in
// transactions of this size, one after another.
const dequeueBatch = 128

type queues struct {
	w      *Engine
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	byName map[string]*dequeuer
	closed bool
}

type dequeuer struct {
	name string
	poll atomic.Int64 // time.Duration
	poke chan struct{}
	mu   sync.Mutex
	held func() // the clock hold of a pending poke, released after the next pass
}

func newQueues(w *Engine) *queues {
	ctx, cancel := context.WithCancel(context.Background())
	return &queues{w: w, ctx: ctx, cancel: cancel, byName: map[string]*dequeuer{}}
}

// RegisterQueue stores a queue's limits for the fleet and starts its
// dequeuer here. A change of the stored limits is logged by the instance
// that wrote it, so once per change across the fleet.
func (w *Engine) RegisterQueue(ctx context.Context, l store.QueueLimits) error {
	if err := CheckQueue(l); err != nil {
		return err
	}
	changed, err := w.e.Store().PutQueue(ctx, l)
	if err != nil {
		return errs.Wrap(errs.CodeUnavailable, err, "queue "+l.Name+": cannot store its limits")
	}
	if changed {
		w.log.Info("queue limits stored", "queue", l.Name, "concurrency", l.Concurrency, "worker_concurrency", l.WorkerConcurrency,
			"partition_concurrency", l.PartitionConcurrency, "rate_limit", l.RateLimit, "rate_period", l.RatePeriod)
	}
	d := w.queues.get(l.Name)
	if d != nil && l.RateLimit > 0 && l.RatePeriod > 0 {
		// a rate-limited queue looks again when its window has room
		d.poll.Store(int64(min(queuePoll, max(l.RatePeriod/time.Duration(l.RateLimit), 10*time.Millisecond))))
	}
	w.queues.pokeQueue(l.Name)
	return nil
}

// CheckQueue refuses limits that mean nothing.
func CheckQueue(l store.QueueLimits) error {
	switch {
	case l.Name == "":
		return errs.New(errs.CodeInvalidArgument, "queue name is empty")
	case len(l.Name) > 200:
		return errs.New(errs.CodeInvalidArgument, "queue name %.20q… is longer than 200 bytes", l.Name)
	case l.Concurrency < 0 || l.WorkerConcurrency < 0 || l.PartitionConcurrency < 0:
		return errs.New(errs.CodeInvalidArgument, "queue %q: a concurrency is negative", l.Name)
	case l.RateLimit < 0 || l.RatePeriod < 0:
		return errs.New(errs.CodeInvalidArgument, "queue %q: the rate limit is negative", l.Name)
	case (l.RateLimit > 0) != (l.RatePeriod > 0):
		return errs.New(errs.CodeInvalidArgument, "queue %q: a rate limit needs both Limit and Period", l.Name)
	}
	return nil
}

// Queues lists the queues stored for the fleet.
func (w *Engine) Queues(ctx context.Context) ([]store.QueueLimits, error) {
	return w.e.Store().ListQueues(ctx)
}

// QueueStats counts a queue's runs.
func (w *Engine) QueueStats(ctx context.Context, name string) (store.QueueStats, error) {
	return w.e.Store().QueueStats(ctx, name)
}

// get returns the queue's dequeuer, starting it on first use (nil once
// the engine stops).
func (q *queues) get(name string) *dequeuer {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil
	}
	d := q.byName[name]
	if d == nil {
		d = &dequeuer{name: name, poke: make(chan struct{}, 1)}
		d.poll.Store(int64(queuePoll))
		q.byName[name] = d
		q.wg.Add(1)
		go q.run(d)
	}
	return d
}

// pokeQueue has the queue's dequeuer look at it now; the clock does not
// move on until it has.
func (q *queues) pokeQueue(name string) {
	d := q.get(name)
	if d == nil {
		return
	}
	d.mu.Lock()
	if d.held == nil {
		d.held = q.w.clk.Hold()
	}
	d.mu.Unlock()
	select {
	case d.poke <- struct{}{}:
	default:
	}
}

func (q *queues) run(d *dequeuer) {
	defer q.wg.Done()
	log := q.w.log.With("queue", d.name)
	var failing bool
	for {
		d.mu.Lock()
		release := d.held
		d.held = nil
		d.mu.Unlock()
		err := q.pass(d)
		if release != nil {
			release()
		}
		switch {
		case err != nil && q.ctx.Err() == nil && !failing:
			failing = true
			log.Warn("queue: cannot dequeue; retrying", "err", err)
		case err == nil && failing:
			failing = false
			log.Info("queue: dequeuing again")
		}
		if !q.wait(d) {
			return
		}
	}
}

// pass dequeues until the queue has no more room or runs to give.
func (q *queues) pass(d *dequeuer) error {
	for q.ctx.Err() == nil {
		got, err := q.w.e.Store().Dequeue(q.ctx, store.DequeueRequest{Queue: d.name, Max: dequeueBatch})
		if err != nil {
			return err
		}
		for _, g := range got {
			q.w.e.WakeShard(g.Shard)
		}
		if len(got) > 0 {
			q.w.tel.QueueDequeued(d.name, len(got))
		}
		if len(got) < dequeueBatch {
			return nil
		}
	}
	return nil
}

// wait sleeps until a poke or the poll interval; false once stopping.
func (q *queues) wait(d *dequeuer) bool {
	ctx, cancel := context.WithCancel(q.ctx)
	defer cancel()
	go func() {
		select {
		case <-d.poke:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := q.w.clk.Sleep(ctx, time.Duration(d.poll.Load()))
	if q.ctx.Err() != nil {
		return false
	}
	_ = err // woken early by a poke: that is what it waited for
	return true
}

// stop stops every dequeuer.
func (q *queues) stop() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cancel()
	q.wg.Wait()
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, d := range q.byName {
		d.mu.Lock()
		if d.held != nil {
			d.held()
			d.held = nil
		}
		d.mu.Unlock()
	}
}
