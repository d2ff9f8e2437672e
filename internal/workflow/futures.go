package workflow

// Futures: operations a run starts now and waits for later, or races. Each
// takes its sequence number when it is created, as a sequential operation
// does, so replays meet them in the same order:
//
//   - Go runs a step on a goroutine of its own (at most MaxParallel of a
//     run at once). Its outcome is journaled by that goroutine as soon as
//     it is known, through the runner's group commit, so a fan-out's
//     completions share commits and a finished step never runs again.
//   - Timer, SignalFuture and StartChild arm what Sleep, AwaitSignal and
//     ExecuteChild arm, without suspending; they complete in a later
//     replay, when the timer's message, the signal or the child's end has
//     journaled them.
//   - Select journals which future it returned (kind "select"), so a
//     replay returns what the live run returned whatever finished since.
//
// Waiting on a future a later message completes suspends the run; before it
// is unloaded, the Go steps still running finish and journal their
// outcomes (settle). A run that ends with Go steps still running cancels
// them and waits for them to return.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// DefaultMaxParallel is how many Go steps of one run run at once unless
// the workflow sets its own bound (Options.MaxParallel).
const DefaultMaxParallel = 64

// Options tune a registered workflow.
type Options struct {
	// MaxParallel bounds the Go steps of one run running at once (0:
	// DefaultMaxParallel).
	MaxParallel int
}

// Future is an operation a run started and may wait for. Its methods are
// called from workflow code only (the run's goroutine).
type Future struct {
	c    *Context
	seq  int
	kind store.JournalKind
	name string // the step's, signal's or child workflow's name
	wait Waiting

	done   bool
	result []byte
	err    error

	// a Go step running in this replay: its outcome arrives on res
	running bool
	res     chan goOutcome
	cancel  context.CancelFunc
}

// goOutcome is what a Go step's goroutine hands back: the entry it
// journaled, or why the run must unwind (the shard was lost, a write
// failed).
type goOutcome struct {
	entry  store.JournalEntry
	unwind any
}

// Done reports whether the future has finished, without waiting.
func (f *Future) Done() bool {
	if f.running {
		f.poll()
	}
	return f.done
}

// Seq is the future's operation number in the run's journal.
func (f *Future) Seq() int { return f.seq }

func (f *Future) complete(e store.JournalEntry) {
	f.done, f.running, f.result = true, false, e.Result
	if len(e.Error) > 0 {
		f.err = errs.Decode(e.Error)
	}
}

// poll takes a Go step's outcome if it is there.
func (f *Future) poll() bool {
	select {
	case o := <-f.res:
		f.take(o)
		return true
	default:
		return false
	}
}

// take records o in the run's journal view, or unwinds the run.
func (f *Future) take(o goOutcome) {
	c := f.c
	c.goRunning--
	f.running = false
	if o.unwind != nil {
		panic(c.unwind(o.unwind))
	}
	c.journal[f.seq] = o.entry
	f.complete(o.entry)
}

// Get returns the future's outcome: at once when it is done, after the
// step when it is a Go step of this replay, and otherwise by suspending the
// run until a later message completes it.
func (f *Future) Get() ([]byte, error) {
	c := f.c
	if c.unwound != nil {
		panic(c.unwound)
	}
	c.flush()
	if f.running {
		select {
		case o := <-f.res:
			f.take(o)
		case <-c.ctx.Done():
			panic(c.unwind(lost{}))
		}
	}
	if !f.done {
		if c.replayOnly {
			panic(c.unwind(replayEnd{}))
		}
		panic(c.unwind(suspend{on: f.wait.String()}))
	}
	return f.result, f.err
}

// futureOf starts a future at the next operation of kind and name; it is
// done already when the journal has it.
func (c *Context) futureOf(kind store.JournalKind, name string) (*Future, bool) {
	seq, e := c.next(kind, name)
	f := &Future{c: c, seq: seq, kind: kind, name: name}
	if e != nil {
		f.complete(*e)
		return f, true
	}
	return f, false
}

// Go starts fn as a step running beside the run's code, and returns its
// future. Like Step, a journaled outcome replays without running fn again.
func (c *Context) Go(name string, fn func(ctx context.Context) ([]byte, error), policy RetryPolicy) *Future {
	f, done := c.futureOf(store.JournalStep, name)
	f.wait = Waiting{Kind: store.JournalStep, Name: name, Seq: f.seq}
	if done {
		return f
	}
	if c.sem == nil {
		n := c.maxParallel
		if n <= 0 {
			n = DefaultMaxParallel
		}
		c.sem, c.goWake = make(chan struct{}, n), make(chan struct{}, 1)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	f.running, f.res, f.cancel = true, make(chan goOutcome, 1), cancel
	c.goRunning++
	c.goFutures = append(c.goFutures, f)
	c.goWG.Add(1)
	go func() {
		defer c.goWG.Done()
		defer cancel()
		f.res <- c.runGo(ctx, f.seq, name, fn, policy.withDefaults())
		select {
		case c.goWake <- struct{}{}:
		default:
		}
	}()
	return f
}

// runGo runs one Go step to its outcome and journals it (on the step's
// goroutine: nothing of the Context but its immutable parts is touched).
func (c *Context) runGo(ctx context.Context, seq int, name string, fn func(context.Context) ([]byte, error), p RetryPolicy) goOutcome {
	select {
	case c.sem <- struct{}{}:
		defer func() { <-c.sem }()
	case <-ctx.Done():
		return goOutcome{unwind: lost{}}
	}
	started := c.w.clk.Now()
	entry := store.JournalEntry{ExecutionID: c.exec.ID, Seq: seq, Kind: store.JournalStep, Name: name, Runner: c.fence.Owner, StartedAt: started}
	for attempt := 1; ; attempt++ {
		tried := c.w.clk.Now()
		sctx, endSpan := c.w.tel.StartStep(ctx, c.exec.Name, c.exec.ID, name, seq, attempt)
		out, err := runStep(sctx, fn)
		endSpan(err)
		if ctx.Err() != nil {
			return goOutcome{unwind: lost{}} // the run ended, or lost its shard
		}
		entry.Attempts = attempt
		if err == nil {
			entry.Result = out
			c.w.introStep(c, seq, name, store.JournalStep, attempt, "completed", "", tried, c.w.clk.Now())
			break
		}
		final := attempt >= p.MaxAttempts || (p.NonRetryable != nil && p.NonRetryable(err)) || errors.Is(err, errs.ErrNonDeterminism)
		status := "retrying"
		if final {
			status = "failed"
		}
		c.w.introStep(c, seq, name, store.JournalStep, attempt, status, err.Error(), tried, c.w.clk.Now())
		if final {
			entry.Error = errs.Encode(err)
			break
		}
		if c.w.clk.Sleep(ctx, p.Backoff(attempt)) != nil {
			return goOutcome{unwind: lost{}}
		}
	}
	err := c.w.wr.write(store.RunWrite{Shard: c.exec.Shard, Fence: c.fence, Entry: &entry})
	switch {
	case err == nil:
		return goOutcome{entry: entry}
	case errors.Is(err, errs.ErrAlreadyExists):
		// only this replay writes its steps: another runner got here first
		return goOutcome{unwind: storeFailure{err}}
	default:
		return goOutcome{unwind: storeFailure{err}}
	}
}

// Timer returns a future that completes d from now, durably (a timer
// message, as Sleep arms).
func (c *Context) Timer(d time.Duration) *Future {
	f, done := c.futureOf(store.JournalSleep, "timer")
	f.wait = Waiting{Kind: store.JournalSleep, Name: "timer", Seq: f.seq, Sleep: d}
	if !done && !c.replayOnly {
		c.w.schedule(c, f.seq, timerPayload{Seq: f.seq, Kind: store.JournalSleep, Name: "timer"}, d)
	}
	return f
}

// SignalFuture returns a future of the named signal's payload.
func (c *Context) SignalFuture(name string) *Future {
	f, done := c.futureOf(store.JournalSignal, name)
	f.wait = Waiting{Kind: store.JournalSignal, Name: name, Seq: f.seq}
	if done || c.replayOnly {
		return f
	}
	sig, err := c.w.ws.GetSignal(c.ctx, c.exec.ID, name)
	if err != nil {
		panic(c.unwind(storeFailure{err}))
	}
	if sig != nil {
		c.record(f.seq, store.JournalEntry{Kind: store.JournalSignal, Name: name, Result: sig.Payload, Attempts: 1, StartedAt: c.w.clk.Now()})
		f.complete(c.journal[f.seq])
	}
	return f
}

// StartChild starts the named workflow as a child of this run (once) and
// returns the future of its result.
func (c *Context) StartChild(name string, input []byte, o ChildOptions) *Future {
	f, done := c.futureOf(store.JournalChild, name)
	childID := c.exec.ID + "/" + strconv.Itoa(f.seq)
	f.wait = Waiting{Kind: store.JournalChild, Name: childID, Seq: f.seq}
	if done || c.replayOnly {
		return f
	}
	if o.ParentClose == "" {
		o.ParentClose = ParentCloseTerminate
	}
	x, err := c.w.start(c.ctx, name, input, StartOptions{ID: childID, ParentID: c.exec.ID, ParentClose: o.ParentClose, Source: "child", Trace: c.trace()})
	if err != nil {
		panic(c.unwind(storeFailure{err}))
	}
	if x.Status.Terminal() {
		entry := store.JournalEntry{Kind: store.JournalChild, Name: name, Result: x.Output, Error: x.Error, Attempts: 1, StartedAt: c.w.clk.Now()}
		if x.Status == store.ExecCancelled && len(x.Error) == 0 {
			entry.Error = errs.Encode(errs.New(errs.CodeCancelled, "child workflow %s was cancelled", childID))
		}
		c.record(f.seq, entry)
		f.complete(c.journal[f.seq])
	}
	return f
}

// Select returns the index in fs of a future that is done: on replay the
// one the live run returned, live the first of fs done already, else the
// first Go step of this replay to finish, else the run suspends until a
// message completes one.
func (c *Context) Select(fs ...*Future) int {
	seq, e := c.next(store.JournalSelect, "select")
	if e != nil {
		var i int
		if err := json.Unmarshal(e.Result, &i); err != nil || i < 0 || i >= len(fs) {
			panic(c.unwind(divergence{seq: seq, want: fmt.Sprintf("Select() choosing future %s", e.Result), got: fmt.Sprintf("Select() over %d futures", len(fs))}))
		}
		// the chosen future's outcome is journaled before the select's
		if !fs[i].Done() {
			fs[i].Get()
		}
		return i
	}
	if len(fs) == 0 {
		panic(c.unwind(divergence{seq: seq, want: "Select() over at least one future", got: "Select() over none"}))
	}
	for {
		for i, f := range fs {
			if f.Done() {
				out, _ := json.Marshal(i)
				c.record(seq, store.JournalEntry{Kind: store.JournalSelect, Name: "select", Result: out, Attempts: 1, StartedAt: c.w.clk.Now()})
				return i
			}
		}
		running := false
		for _, f := range fs {
			running = running || f.running
		}
		if !running {
			panic(c.unwind(suspend{on: Waiting{Kind: store.JournalSelect, Name: strconv.Itoa(len(fs)) + " futures", Seq: seq}.String()}))
		}
		select {
		case <-c.goWake:
		case <-c.ctx.Done():
			panic(c.unwind(lost{}))
		}
	}
}

// settleWait is how long a suspending run gives its Go steps still running
// to finish (and be journaled) before it cancels them: a step that waits on
// something the run has not awaited yet must not hold the run's mailbox.
const settleWait = 2 * time.Second

// settle ends this replay's Go steps: on a suspension they get settleWait
// to finish and journal their outcomes (so the next replay finds them
// done), then the rest are cancelled and run again when the run resumes;
// otherwise (the run ended, or must unwind) they are cancelled at once. It
// returns once every one has returned.
func (c *Context) settle(suspending bool) {
	if len(c.goFutures) == 0 {
		return
	}
	all := make(chan struct{})
	go func() { c.goWG.Wait(); close(all) }()
	if suspending {
		t := time.NewTimer(settleWait)
		select {
		case <-all:
		case <-t.C:
		}
		t.Stop()
	}
	for _, f := range c.goFutures {
		if f.running {
			f.cancel()
		}
	}
	<-all
	if suspending {
		for _, f := range c.goFutures {
			if f.running {
				if o := <-f.res; o.unwind == nil {
					c.journal[f.seq] = o.entry
					f.complete(o.entry)
				}
				c.goRunning--
			}
		}
	}
}
