package workflow

// The workflow context: what workflow code calls. Every operation has a
// sequence number; on replay a journaled operation returns its recorded
// outcome without running, and the first unrecorded one runs (a step) or
// suspends the run (sleep, signal, child) by unwinding it with a panic that
// the runner recovers.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/store"
)

// Context is handed to workflow code. It is not a context.Context: use
// Context() for one, and do I/O only inside steps.
type Context struct {
	ctx     context.Context
	w       *Engine
	exec    store.Execution
	fence   store.Fence
	journal map[int]store.JournalEntry
	seq     int
	// reached counts the operations the run got to before this replay:
	// its journal's entries from the first on, or up to the one it was
	// suspended on, which has no entry until its wait ends (0: none).
	reached int
	// waited is what the run was suspended on when this replay began (its
	// row's WaitingOn), nil for none: the determinism guard for the one
	// operation the journal does not hold yet.
	waited   *Waiting
	cancel   bool
	log      *slog.Logger
	children bool // this replay started or awaited a child
	start    *StartInfo
	// pending is the last step's entry, not yet written: it goes with the
	// next durable operation, or with the run's final state (one commit).
	pending *store.JournalEntry
	msgID   int64 // the message running this replay (0: volatile)
	// delivery counts the deliveries of that message: above 1, an earlier
	// one may have run this replay's first operations and died unjournaled.
	delivery int
	// unwound is the first unwind of this replay (suspend, cancelled, …):
	// workflow code that recovers it cannot cancel it (see unwind).
	unwound any
	// replayOnly: a check of recorded history (Engine.Replay); the first
	// operation past the journal ends the replay instead of running.
	replayOnly bool

	// Go steps of this replay (futures.go): the bound on those running at
	// once, the ones started, how many have not been taken yet, their
	// goroutines, and a wake-up when one finishes.
	maxParallel int
	sem         chan struct{}
	goFutures   []*Future
	goRunning   int
	goWG        sync.WaitGroup
	goWake      chan struct{}
}

// unwind remembers v as the replay's unwind and returns the first one, to
// panic with: a recover() in workflow code may catch the panic, but every
// later operation unwinds again and execute treats a function that returns
// afterwards as unwound, so a swallowed suspension still suspends the run.
func (c *Context) unwind(v any) any {
	if c.unwound == nil {
		c.unwound = v
	}
	return c.unwound
}

// hasChildren reports whether the run has ever had a child: only then does
// finishing it need to look for unfinished ones.
func (c *Context) hasChildren() bool {
	if c.children {
		return true
	}
	for _, e := range c.journal {
		if e.Kind == store.JournalChild {
			return true
		}
	}
	return false
}

// suspend unwinds a run that must wait.
type suspend struct{ on string }

// String is what workflow code that recovers the unwind sees.
func (s suspend) String() string {
	return "voltro: the run suspends here, on " + s.on + " (voltro unwinds the workflow function to suspend it: re-panic this value)"
}

// cancelled unwinds a run whose cancellation was requested.
type cancelled struct{}

// Context returns a context.Context for the run (cancelled when the runner
// loses the shard).
func (c *Context) Context() context.Context { return c.ctx }

// ExecutionID is the run's id.
func (c *Context) ExecutionID() string { return c.exec.ID }

// WorkflowName is the registered name.
func (c *Context) WorkflowName() string { return c.exec.Name }

// Logger is a logger carrying the execution id.
func (c *Context) Logger() *slog.Logger { return c.log }

// CancelRequested reports whether someone asked to cancel this run. The next
// operation that is not yet journaled ends it with ErrCancelled.
func (c *Context) CancelRequested() bool { return c.cancel }

// resumeAt sets how far the run got before this replay (reached), from
// its journal, loaded already, and waitingOn, its row's wait: the journal's
// entries from the first on without a gap (an entry past a gap, a timer
// that fired after a retry cut the journal, says nothing of the ones
// before it), or up to the operation it waits on.
func (c *Context) resumeAt(waitingOn string) {
	for {
		if _, ok := c.journal[c.reached]; !ok {
			break
		}
		c.reached++
	}
	if wt, ok := ParseWaiting(waitingOn); ok {
		c.reached = max(c.reached, wt.Seq+1)
		c.waited = &wt
	}
}

// next takes the next sequence number and returns its journal entry, after
// checking the journal agrees with the code (the determinism guard).
func (c *Context) next(kind store.JournalKind, name string) (int, *store.JournalEntry) {
	if c.unwound != nil {
		panic(c.unwound) // the code recovered an unwind and went on
	}
	c.flush()
	seq := c.seq
	c.seq++
	if kind == store.JournalChild {
		c.children = true // even if this replay ends here (cancelled)
	}
	e, ok := c.journal[seq]
	if !ok {
		if c.cancel {
			panic(c.unwind(cancelled{}))
		}
		if w := c.waited; w != nil && w.Seq == seq && !w.is(kind, name) {
			panic(c.unwind(divergence{seq: seq, want: w.String(), got: fmt.Sprintf("%s %q", kind, name), waited: true}))
		}
		if c.replayOnly {
			panic(c.unwind(replayEnd{}))
		}
		return seq, nil
	}
	if e.Kind != kind || e.Name != name {
		panic(c.unwind(divergence{seq: seq, want: fmt.Sprintf("%s %q", e.Kind, e.Name), got: fmt.Sprintf("%s %q", kind, name)}))
	}
	return seq, &e
}

type divergence struct {
	seq       int
	want, got string
	waited    bool // want is what the run was suspended on, not a journal entry
}

func (d divergence) err(id string) error {
	had := "the journal recorded " + d.want
	if d.waited {
		had = "the run was suspended on " + d.want
	}
	return errs.New(errs.CodeNonDeterminism, "workflow %s diverged from its journal at operation %d: %s, the code asked for %s (a deployed change altered the order of steps of a running workflow)", id, d.seq, had, d.got)
}

// RetryPolicy says how a step is retried.
type RetryPolicy struct {
	MaxAttempts  int                             // default 3
	Backoff      func(attempt int) time.Duration // default 100ms doubling to 5s
	NonRetryable func(error) bool                // errors that fail the step at once
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 3
	}
	if p.Backoff == nil {
		p.Backoff = func(n int) time.Duration { return min(100*time.Millisecond<<min(n-1, 6), 5*time.Second) }
	}
	return p
}

// Step runs fn once per run: its result (or final error) is journaled, and
// replays return it without running fn again. fn may run more than once if
// the process dies before the result is journaled.
func (c *Context) Step(name string, fn func(ctx context.Context) ([]byte, error), policy RetryPolicy) ([]byte, error) {
	seq, e := c.next(store.JournalStep, name)
	if e != nil {
		if len(e.Error) > 0 {
			return nil, errs.Decode(e.Error)
		}
		return e.Result, nil
	}
	p := policy.withDefaults()
	started := c.w.clk.Now()
	var lastErr error
	for attempt := 1; ; attempt++ {
		tried := c.w.clk.Now()
		sctx, endSpan := c.w.tel.StartStep(c.ctx, c.exec.Name, c.exec.ID, name, seq, attempt)
		out, err := runStep(sctx, fn)
		endSpan(err)
		if c.ctx.Err() != nil {
			panic(c.unwind(lost{}))
		}
		if err == nil {
			c.record(seq, store.JournalEntry{Kind: store.JournalStep, Name: name, Result: out, Attempts: attempt, StartedAt: started})
			// every attempt is execution history, a first-try success too;
			// the recorder batches it off the run's path
			c.w.introStep(c, seq, name, store.JournalStep, attempt, "completed", "", tried, c.w.clk.Now())
			return out, nil
		}
		lastErr = err
		final := attempt >= p.MaxAttempts || (p.NonRetryable != nil && p.NonRetryable(err)) || errors.Is(err, errs.ErrNonDeterminism)
		status := "retrying"
		if final {
			status = "failed"
		}
		c.w.introStep(c, seq, name, store.JournalStep, attempt, status, err.Error(), tried, c.w.clk.Now())
		if final {
			break
		}
		if c.w.clk.Sleep(c.ctx, p.Backoff(attempt)) != nil {
			panic(c.unwind(lost{}))
		}
	}
	c.record(seq, store.JournalEntry{Kind: store.JournalStep, Name: name, Error: errs.Encode(lastErr), Attempts: p.MaxAttempts, StartedAt: started})
	return nil, errs.Decode(errs.Encode(lastErr))
}

// lost unwinds a run whose shard moved away mid-run: nothing more is written.
type lost struct{}

func runStep(ctx context.Context, fn func(context.Context) ([]byte, error)) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errs.New(errs.CodeHandlerPanic, "step panicked: %v", r)
		}
	}()
	return fn(ctx)
}

// record journals one operation, fenced; losing the shard unwinds the run.
// A step's entry is written lazily: before the next operation starts (so a
// finished step never runs again once a later one has begun) or together
// with the run's final state. Workflow code between operations is
// deterministic and does no I/O, so nothing can observe the difference but a
// crash in between, which reruns the step as a crash before its write would.
func (c *Context) record(seq int, e store.JournalEntry) {
	e.ExecutionID, e.Seq, e.Runner = c.exec.ID, seq, c.fence.Owner
	c.flush()
	if e.Kind.Lazy() {
		c.journal[seq] = e
		c.pending = &e
		return
	}
	c.write(e)
}

// flush writes the pending step entry, if any.
func (c *Context) flush() {
	if e := c.pending; e != nil {
		c.pending = nil
		c.write(*e)
	}
}

func (c *Context) write(e store.JournalEntry) {
	err := c.w.wr.write(store.RunWrite{Shard: c.exec.Shard, Fence: c.fence, Entry: &e})
	switch {
	case err == nil:
		c.journal[e.Seq] = e
	case errors.Is(err, errs.ErrAlreadyExists):
		if e.Kind.Lazy() {
			// only this replay writes its steps and markers: another runner got here
			// first, and its entry, not this one, is the step's result
			panic(c.unwind(storeFailure{err}))
		}
		// someone (a timer, a racing signal) recorded it first: take theirs
		j, jerr := c.w.ws.Journal(context.WithoutCancel(c.ctx), c.exec.ID)
		if jerr != nil {
			panic(c.unwind(storeFailure{jerr}))
		}
		for _, x := range j {
			c.journal[x.Seq] = x
		}
	default:
		panic(c.unwind(storeFailure{err}))
	}
}

// storeFailure unwinds a run whose journal write failed (fenced or outage):
// the message is retried by whoever owns the shard then.
type storeFailure struct{ err error }

// Sleep suspends the run for d, durably: a timer message wakes it on
// whichever runner owns its shard when d has passed.
func (c *Context) Sleep(d time.Duration) {
	seq, e := c.next(store.JournalSleep, "sleep")
	if e != nil {
		return
	}
	c.w.schedule(c, seq, timerPayload{Seq: seq, Kind: store.JournalSleep, Name: "sleep"}, d)
	panic(c.unwind(suspend{on: Waiting{Kind: store.JournalSleep, Seq: seq, Sleep: d}.String()}))
}

type timerPayload struct {
	Seq  int               `json:"seq"`
	Kind store.JournalKind `json:"kind"`
	Name string            `json:"name"`
}

// AwaitSignal returns the payload of the named signal, suspending the run
// until it arrives or timeout passes (0 waits forever; a timeout returns an
// error matching errs.ErrDeadline).
func (c *Context) AwaitSignal(name string, timeout time.Duration) ([]byte, error) {
	seq, e := c.next(store.JournalSignal, name)
	if e != nil {
		if len(e.Error) > 0 {
			return nil, errs.Decode(e.Error)
		}
		return e.Result, nil
	}
	sig, err := c.w.ws.GetSignal(c.ctx, c.exec.ID, name)
	if err != nil {
		panic(c.unwind(storeFailure{err}))
	}
	if sig != nil {
		c.record(seq, store.JournalEntry{Kind: store.JournalSignal, Name: name, Result: sig.Payload, Attempts: 1, StartedAt: c.w.clk.Now()})
		j := c.journal[seq]
		if len(j.Error) > 0 {
			return nil, errs.Decode(j.Error)
		}
		return j.Result, nil
	}
	if timeout > 0 {
		c.w.schedule(c, seq, timerPayload{Seq: seq, Kind: store.JournalSignal, Name: name}, timeout)
	}
	panic(c.unwind(suspend{on: Waiting{Kind: store.JournalSignal, Name: name, Seq: seq}.String()}))
}

// ChildOptions configure a child run.
type ChildOptions struct {
	ParentClose string // terminate (default) | request-cancel | abandon
}

// ExecuteChild starts the named workflow as a child of this run (once) and
// returns its result, suspending until it finishes.
func (c *Context) ExecuteChild(name string, input []byte, o ChildOptions) ([]byte, error) {
	seq, e := c.next(store.JournalChild, name)
	if e != nil {
		if len(e.Error) > 0 {
			return nil, errs.Decode(e.Error)
		}
		return e.Result, nil
	}
	if o.ParentClose == "" {
		o.ParentClose = ParentCloseTerminate
	}
	childID := fmt.Sprintf("%s/%d", c.exec.ID, seq)
	x, err := c.w.start(c.ctx, name, input, StartOptions{ID: childID, ParentID: c.exec.ID, ParentClose: o.ParentClose, Source: "child", Trace: c.trace()})
	if err != nil {
		panic(c.unwind(storeFailure{err}))
	}
	if x.Status.Terminal() {
		entry := store.JournalEntry{Kind: store.JournalChild, Name: name, Result: x.Output, Error: x.Error, Attempts: 1, StartedAt: c.w.clk.Now()}
		if x.Status == store.ExecCancelled && len(x.Error) == 0 {
			entry.Error = errs.Encode(errs.New(errs.CodeCancelled, "child workflow %s was cancelled", childID))
		}
		c.record(seq, entry)
		j := c.journal[seq]
		if len(j.Error) > 0 {
			return nil, errs.Decode(j.Error)
		}
		return j.Result, nil
	}
	panic(c.unwind(suspend{on: Waiting{Kind: store.JournalChild, Name: childID, Seq: seq}.String()}))
}

// trace is the W3C traceparent of the current replay's span.
func (c *Context) trace() string { return observe.Traceparent(c.ctx) }

// StartInfo is what the run was started with: who, from where, under which
// trace, and by which parent.
type StartInfo struct {
	Subject     string // who started it (WithSubject)
	Source      string // api, cli, schedule, child
	Trace       string // W3C traceparent at the start
	ParentID    string // the parent run of a child
	ParentClose string // the child's parent-close policy
}

// StartInfo loads the run's start context, on whichever runner executes the
// run, the first time the code asks for it in a replay.
func (c *Context) StartInfo() (StartInfo, error) {
	if c.start == nil {
		sc, err := c.w.ws.GetStartContext(c.ctx, c.exec.ID)
		if err != nil {
			return StartInfo{}, err
		}
		c.start = &StartInfo{Subject: sc.Subject, Source: sc.Source, Trace: sc.Trace, ParentID: sc.ParentID, ParentClose: sc.ParentClose}
	}
	return *c.start, nil
}
