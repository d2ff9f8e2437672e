package workflow

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltro/voltro/internal/clock"
	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/service"
	"github.com/voltro/voltro/internal/store"
)

// Parent-close policies.
const (
	ParentCloseTerminate     = "terminate"
	ParentCloseRequestCancel = "request-cancel"
	ParentCloseAbandon       = "abandon"
)

// EntityPrefix prefixes the entity type of every workflow.
const EntityPrefix = "workflow/"

// Func is a registered workflow's code, on encoded input and output.
type Func func(c *Context, input []byte) ([]byte, error)

type definition struct {
	name   string
	fn     Func
	schema json.RawMessage // of its input, nil when unknown
	opts   Options
}

// Engine registers, starts and drives workflows.
type Engine struct {
	e      *engine.Engine
	ws     store.Workflows
	wr     *runWriter // group commit of the runner's journal and state writes
	starts *starter   // group commit of starts, where the store batches them
	reads  *runReader // Result's reads of run rows, shared
	intro  *recorder
	log    *slog.Logger
	tel    *observe.Telemetry // spans and instruments of the instance
	clk    clock.Clock        // the engine's: timestamps, step backoff

	mu      sync.Mutex
	defs    map[string]*definition
	waiters map[string][]chan handedEnd
	// ends orders, in this process, Result's waits against the writes of
	// runs' ends (see handedEnd).
	ends atomic.Int64
	// fresh holds runs this instance just started and dispatched to itself,
	// so their first delivery need not read back the row it wrote.
	fresh sync.Map // execution id -> store.Execution
	// local holds runs dispatched to or executing on this instance until
	// they finish or their replay ends: a finish here reaches Result's
	// waiters here without a read.
	local sync.Map // execution id -> struct{}
	// routed: runs this instance routed to their shard's holder (route.go),
	// by holder, until it pushes their end; local's counterpart for them.
	// starters: runs routed here, by the runner to push their end to.
	routed, starters peerRuns
	queues           *queues // this instance's dequeuers (queues.go)
}

// New attaches workflows to an engine.
func New(e *engine.Engine) *Engine {
	ws := e.Store()
	w := &Engine{e: e, ws: ws, wr: newRunWriter(ws), starts: newStarter(ws, ws.Capabilities().BatchStarts), reads: newRunReader(ws.PollExecutions), log: e.Logger(), tel: e.Telemetry(), clk: e.Clock(), defs: map[string]*definition{}, waiters: map[string][]chan handedEnd{}}
	w.queues = newQueues(w)
	e.HandleStarts(w.onRoutedStart, w.onRunEnded)
	w.intro = newRecorder(ws, e.Config().ReplicaID, e.Logger())
	w.intro.runner = e.Address()
	w.intro.now = w.clk.Now
	return w
}

// Core is the engine the workflows run on: a client sends entity messages
// through it.
func (w *Engine) Core() *engine.Engine { return w.e }

// Stop stops the start and run writers and the introspection writer,
// flushing what they hold. Stop it after the engine it runs on: the
// handlers that end while that engine stops still write through them.
func (w *Engine) Stop(context.Context) error {
	w.queues.stop()
	w.starts.close()
	w.wr.close()
	w.intro.close()
	return nil
}

// Service is the workflow runtime as a part of its instance: nothing to
// start (it works from New, on its engine's deliveries), Stop to stop.
// (Engine's Start starts a run.)
func (w *Engine) Service() service.Service { return service.Funcs{OnStop: w.Stop} }

// Register adds a workflow by name.
func (w *Engine) Register(name string, fn Func) error {
	return w.RegisterTyped(name, fn, nil)
}

// RegisterTyped adds a workflow by name whose input has the JSON Schema
// inputSchema (InputSchema of its Go type; nil for none). The schema is
// published in this instance's runner row, where starts by name check
// their input against it (Hosting.CheckInput).
func (w *Engine) RegisterTyped(name string, fn Func, inputSchema json.RawMessage) error {
	return w.RegisterWith(name, fn, inputSchema, Options{})
}

// RegisterWith is RegisterTyped with the workflow's options.
func (w *Engine) RegisterWith(name string, fn Func, inputSchema json.RawMessage, o Options) error {
	if name == "" {
		return errs.New(errs.CodeInvalidArgument, "workflow name is empty")
	}
	if o.MaxParallel < 0 {
		return errs.New(errs.CodeInvalidArgument, "workflow %q: MaxParallel %d is negative", name, o.MaxParallel)
	}
	d := &definition{name: name, fn: fn, schema: inputSchema, opts: o}
	w.mu.Lock()
	if _, dup := w.defs[name]; dup {
		w.mu.Unlock()
		return errs.New(errs.CodeAlreadyExists, "workflow %q is registered twice", name)
	}
	w.defs[name] = d
	w.mu.Unlock()
	if inputSchema != nil {
		w.e.PublishInputSchema(EntityPrefix+name, inputSchema)
	}
	return w.e.Register(EntityPrefix+name, w.handle(d), engine.EntityOptions{MaxAttempts: 10, StoreOnly: true})
}

// StartOptions tune a start.
type StartOptions struct {
	Key         string // idempotency key: same name + key = same run
	ID          string // explicit execution id (children); overrides Key
	Subject     string
	Source      string
	Trace       string
	ParentID    string
	ParentClose string
	// Queue puts the run on a queue (see queues.go); Partition and
	// Priority are its place there.
	Queue     string
	Partition string
	Priority  int
	// StartAt defers the run's start until then (zero: at once);
	// StartAfter by this much from now, judged by the store's clock where
	// the run is not queued (a queued run's StartAt is this engine's now
	// plus StartAfter).
	StartAt    time.Time
	StartAfter time.Duration
}

// ExecutionID derives the id of a run from its name and idempotency key.
func ExecutionID(name, key string) string {
	h := sha256.Sum256([]byte(name + "\x00" + key))
	return "wf_" + hex.EncodeToString(h[:12])
}

// newRunID is the id of a run started without a key: 48 bits of the start
// time in milliseconds, then 56 random bits, as 26 hex digits. The time
// prefix is for the database, not for users: ids of new runs sort after
// those of old ones, so every index keyed by run id (the run's primary key,
// its journal, steps, events, start message's dedupe key) takes inserts at
// its right edge, in the few pages already cached, instead of in a random
// page of an index that grows with history. With random ids, each start
// touched a cold page of each such index once the history outgrew the
// buffer cache. 56 random bits keep ids unguessable enough for what they
// are (names, not secrets) and collisions out of reach.
//
// 26 digits, where a keyed run's id (ExecutionID) has 24 and a child's
// names its parent: a holder taking a routed start (route.go) accepts only
// this form, so a caller holding the cluster secret cannot plant the run
// of a key, or a parent's child, before its real start.
func newRunID(now time.Time) string {
	var b [13]byte
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	return "wf_" + hex.EncodeToString(b[:])
}

// isPlainRunID reports whether id has the form of newRunID's ids.
func isPlainRunID(id string) bool {
	if len(id) != 3+26 || id[:3] != "wf_" {
		return false
	}
	for _, c := range []byte(id[3:]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Start starts a run (or finds the one its key names). The workflow need
// not be registered on this instance.
func (w *Engine) Start(ctx context.Context, name string, input []byte, o StartOptions) (store.Execution, bool, error) {
	if o.Source == "" {
		o.Source = "api"
	}
	x, err := w.start(ctx, name, input, o)
	return x, x.CreatedAt.IsZero(), err
}

func (w *Engine) start(ctx context.Context, name string, input []byte, o StartOptions) (store.Execution, error) {
	ctx, q, endSpan, err := w.startRequest(ctx, name, input, o)
	if err != nil {
		return store.Execution{}, err
	}
	defer w.clk.Hold()()  // until the start message is dispatched or its owner woken
	if q.Message == nil { // queued: its dequeue enqueues the start message
		stored, existing, _, err := w.ws.StartExecution(ctx, q.Exec, q.Context, nil, nil)
		endSpan(err == nil && !existing, err)
		if err != nil {
			return store.Execution{}, err
		}
		if !existing {
			w.queues.pokeQueue(stored.Queue)
			return stored, nil
		}
		return store.Execution{ID: stored.ID}, nil // existing: no CreatedAt, as below
	}
	stored, existing, routed, err := w.routeStart(ctx, q)
	if !routed {
		stored, existing, err = w.startHere(ctx, q, "")
	}
	endSpan(err == nil && !existing, err)
	if err != nil {
		return store.Execution{}, err
	}
	return stored, nil
}

// startHere inserts q's run, claimed for this runner and run at once when
// it holds the shard and hosts the workflow. starter names the runner that
// routed the start here ("" for none): the run's end is pushed to it.
func (w *Engine) startHere(ctx context.Context, q store.StartRequest, starter string) (store.Execution, bool, error) {
	msg := q.Message
	q.Claim = w.e.ClaimFor(msg.Shard, msg.EntityType)
	out := w.starts.start(ctx, q)
	stored, existing, res, err := out.Stored, out.Existing, out.Result, out.Err
	if err != nil || existing {
		return stored, existing, err
	}
	if res.ClaimedEpoch > 0 {
		w.fresh.Store(stored.ID, stored)
		w.local.Store(stored.ID, struct{}{})
		if starter != "" {
			w.starters.put(stored.ID, starter) // before it can end
		}
	}
	if !w.e.Dispatched(*msg, res) {
		w.fresh.Delete(stored.ID) // delivered elsewhere or later: it reads the row
		w.local.Delete(stored.ID)
		w.starters.take(stored.ID) // its starter polls
	}
	return stored, false, nil
}

// StartTx starts a run in the caller's transaction tx: the run exists if
// and only if tx commits, and its owner starts it as soon as it does. It
// returns the run's id, and existing=true when a run with that id (its
// key's) was there already. The workflow need not be registered here.
func (w *Engine) StartTx(ctx context.Context, tx *sql.Tx, name string, input []byte, o StartOptions) (id string, existing bool, err error) {
	tw, err := w.e.TxWriter()
	if err != nil {
		return "", false, err
	}
	if o.Source == "" {
		o.Source = "api"
	}
	ctx, q, endSpan, err := w.startRequest(ctx, name, input, o)
	if err != nil {
		return "", false, err
	}
	existing, res, err := tw.StartExecutionTx(ctx, tx, q)
	endSpan(err == nil && !existing, err)
	if err != nil {
		return "", false, err
	}
	if !existing && !res.Duplicate && q.Message != nil {
		w.e.AfterCommit(q.Message.Shard, res.ID)
	}
	if !existing && q.Message == nil {
		w.queues.get(q.Exec.Queue) // dequeued within a poll of its commit
	}
	return q.Exec.ID, existing, nil
}

// startRequest builds a start: the run, its start context and its start
// message, under a start span (end it with the outcome).
func (w *Engine) startRequest(ctx context.Context, name string, input []byte, o StartOptions) (context.Context, store.StartRequest, func(bool, error), error) {
	if name == "" {
		return ctx, store.StartRequest{}, nil, errs.New(errs.CodeInvalidArgument, "workflow name is empty")
	}
	if len(input) == 0 {
		input = []byte("null")
	}
	if err := checkPayload("workflow "+name+": input", input); err != nil {
		return ctx, store.StartRequest{}, nil, err
	}
	id := o.ID
	if id == "" && o.Key != "" {
		id = ExecutionID(name, o.Key)
	}
	if id == "" {
		id = newRunID(w.clk.Now())
	}
	typ := EntityPrefix + name
	shard := w.e.ShardOf(typ, id, "")
	x := store.Execution{ID: id, Name: name, Shard: shard, Key: o.Key, Input: input, ParentID: o.ParentID, ParentClose: o.ParentClose,
		Queue: o.Queue, Partition: o.Partition, Priority: o.Priority}
	if o.Queue == "" && (o.Partition != "" || o.Priority != 0) {
		return ctx, store.StartRequest{}, nil, errs.New(errs.CodeInvalidArgument, "workflow %s: a partition key or a priority needs a queue (OnQueue)", name)
	}
	if o.StartAfter < 0 {
		return ctx, store.StartRequest{}, nil, errs.New(errs.CodeInvalidArgument, "workflow %s: StartAfter %s is negative", name, o.StartAfter)
	}
	if o.Queue != "" {
		x.StartAt = o.StartAt
		if o.StartAfter > 0 {
			x.StartAt = w.clk.Now().Add(o.StartAfter)
		}
	}
	// The run keeps the start span's trace context: its replays join it.
	ctx, endSpan := w.tel.StartWorkflow(ctx, name, id, o.Trace)
	sc := store.StartContext{Subject: o.Subject, Trace: cmp.Or(observe.Traceparent(ctx), o.Trace), Source: o.Source, ParentID: o.ParentID, ParentClose: o.ParentClose}
	if o.Queue != "" {
		return ctx, store.StartRequest{Exec: x, Context: sc}, endSpan, nil
	}
	msg := &store.Message{Shard: shard, EntityType: typ, EntityID: id, Tag: TagStart, DedupeKey: store.RunStartKey(id), Headers: w.tel.InjectHeaders(ctx, nil), DeliverAt: o.StartAt, Delay: o.StartAfter}
	return ctx, store.StartRequest{Exec: x, Context: sc, Message: msg}, endSpan, nil
}

// wake sends a message to a run (dedupe makes repeats harmless).
func (w *Engine) wake(ctx context.Context, x store.Execution, tag string, payload []byte, dedupe string) error {
	_, err := w.e.Send(ctx, engine.Message{EntityType: EntityPrefix + x.Name, EntityID: x.ID, Tag: tag, Payload: payload, DedupeKey: dedupe})
	return err
}

// schedule arms a durable timer for operation seq of the run.
func (w *Engine) schedule(c *Context, seq int, tp timerPayload, d time.Duration) {
	payload, _ := json.Marshal(tp)
	_, err := w.e.Send(context.WithoutCancel(c.ctx), engine.Message{
		EntityType: EntityPrefix + c.exec.Name, EntityID: c.exec.ID, Tag: TagTimer, Payload: payload,
		DedupeKey: c.exec.ID + ":timer:" + strconv.Itoa(seq), Delay: max(d, time.Millisecond),
	})
	if err != nil {
		panic(storeFailure{err})
	}
}

// Get returns a run.
func (w *Engine) Get(ctx context.Context, id string) (store.Execution, error) {
	return w.ws.GetExecution(ctx, id)
}

// List lists runs, newest first. A run being executed now names the runner
// executing it (RunnerNow).
func (w *Engine) List(ctx context.Context, f store.ExecutionFilter) ([]store.Execution, error) {
	xs, err := w.ws.ListExecutions(ctx, f)
	if err != nil {
		return nil, err
	}
	var now time.Time
	for i := range xs {
		if xs[i].Status.Terminal() {
			continue
		}
		if now.IsZero() {
			if now, err = w.e.Store().Now(ctx); err != nil {
				return nil, err
			}
		}
		if xs[i].Runner, err = w.runnerAt(ctx, xs[i], now); err != nil {
			return nil, err
		}
	}
	return xs, nil
}

// RunnerNow is the runner executing x now: the one holding a live claim on
// one of its messages (a replay in progress). Otherwise x.Runner, the last
// runner that ran it. The row's runner is written only when a replay ends
// (it suspends or finishes), so a run on its first replay has none there.
func (w *Engine) RunnerNow(ctx context.Context, x store.Execution) (string, error) {
	if x.Status.Terminal() {
		return x.Runner, nil
	}
	now, err := w.e.Store().Now(ctx)
	if err != nil {
		return "", err
	}
	return w.runnerAt(ctx, x, now)
}

func (w *Engine) runnerAt(ctx context.Context, x store.Execution, now time.Time) (string, error) {
	ms, err := w.e.Store().ListMessages(ctx, store.MessageFilter{State: store.StateClaimed, EntityType: EntityPrefix + x.Name, EntityID: x.ID})
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if m.ClaimedBy != "" && m.ClaimExpiresAt.After(now) {
			return m.ClaimedBy, nil
		}
	}
	return x.Runner, nil
}

// Journal returns a run's journal.
func (w *Engine) Journal(ctx context.Context, id string) ([]store.JournalEntry, error) {
	return w.ws.Journal(ctx, id)
}

// Cancel asks a run to stop; its children follow their parent-close policy.
// A run whose workflow no live runner hosts is finished at once (CancelRun).
func (w *Engine) Cancel(ctx context.Context, id string) error {
	_, err := w.CancelRun(ctx, id)
	return err
}

// Signal delivers a named signal; the first of a name wins. It reports
// whether this one was stored.
func (w *Engine) Signal(ctx context.Context, id, name string, payload []byte) (bool, error) {
	if len(payload) == 0 {
		payload = []byte("null")
	}
	if err := checkPayload("signal "+name+": payload", payload); err != nil {
		return false, err
	}
	defer w.clk.Hold()() // a virtual clock waits for the signal's message
	x, err := w.ws.GetExecution(ctx, id)
	if err != nil {
		return false, err
	}
	if x.Status.Terminal() {
		// A signal of this name that arrived first still wins: a second
		// sender learns that it lost, whether or not the run is over yet.
		if sig, err := w.ws.GetSignal(ctx, id, name); err == nil && sig != nil {
			return false, nil
		}
		return false, errs.New(errs.CodeInvalidArgument, "workflow %s is %s: it takes no more signals", id, x.Status)
	}
	stored, err := w.ws.SendSignal(ctx, store.Signal{ExecutionID: id, Name: name, Payload: payload},
		&store.Message{Shard: x.Shard, EntityType: EntityPrefix + x.Name, EntityID: x.ID, Tag: TagSignal, DedupeKey: "wf-signal:" + x.ID + ":" + name})
	if err == nil && stored {
		w.e.WakeShard(x.Shard)
		w.intro.event(id, "signal", name)
	}
	return stored, err
}

// localPoll is how often Result reads the database while the run executes
// on this instance: only as a safety net, since the run's handler hands the
// finished row over (notifyLocal) or says it stopped executing here (nudge).
const localPoll = time.Second

// routedPoll is Result's first wait for a run routed to its holder.
const routedPoll = 250 * time.Millisecond

// Result waits until the run is finished and returns it. A read that fails
// with errs.CodeUnavailable (a dropped connection, a failover) is retried
// with the same backoff until ctx ends: the run goes on regardless, and a
// one-off outage must not end the wait. Other errors return at once. An
// id with no run yet is waited for (a start in a transaction that has not
// committed); see ResultOfExisting.
func (w *Engine) Result(ctx context.Context, id string) (store.Execution, error) {
	return w.result(ctx, id, false)
}

// ResultOfExisting is Result for a run known to exist (its start returned
// after its row was committed): a missing row is errs.ErrNotFound at once
// (deleted since, by retention or a purge) instead of a wait.
func (w *Engine) ResultOfExisting(ctx context.Context, id string) (store.Execution, error) {
	return w.result(ctx, id, true)
}

func (w *Engine) result(ctx context.Context, id string, mustExist bool) (store.Execution, error) {
	ch := make(chan handedEnd, 1)
	w.mu.Lock()
	w.waiters[id] = append(w.waiters[id], ch)
	since := w.ends.Add(1) // an end written from here on is this wait's
	w.mu.Unlock()
	defer w.dropWaiter(id, ch)
	isLocal := func() bool { _, ok := w.local.Load(id); return ok }
	// A run routed to its shard's holder: that runner pushes its end, unless
	// it froze or died and another finished it, so the row is read at a
	// slower backoff meanwhile, and right away unless it was just started.
	routedAt, routed := w.routed.since(id)
	backoff, ceiling := time.Millisecond, 500*time.Millisecond
	if routed {
		backoff, ceiling = routedPoll, localPoll
	}
	read := !isLocal() && (!routed || time.Since(routedAt) > localPoll) // this instance runs it, or its holder will say: reading now would only load the database
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		var x store.Execution
		outage := false
		if read {
			var err error
			x, err = w.reads.read(ctx, id)
			if err != nil && ctx.Err() != nil {
				return x, errs.Wrap(errs.CodeDeadline, ctx.Err(), "waiting for workflow "+id)
			}
			outage = errors.Is(err, errs.ErrUnavailable)
			if err != nil && !outage && (mustExist || !errors.Is(err, errs.ErrNotFound)) {
				return x, err
			}
			if err == nil && x.Status.Terminal() {
				return x, nil
			}
		}
		wait := localPoll
		if !isLocal() || outage {
			wait, backoff = backoff, min(backoff*2, ceiling)
		}
		timer.Reset(wait)
		select {
		case done := <-ch:
			if done.x.Status.Terminal() && done.stamp > since {
				return done.x, nil // finished here: the row as written
			}
			// nudged: it stopped executing here or on its holder
			// (suspended, or its shard moved), or an end written before
			// this wait began (a retry may have reopened the run since):
			// read now, then poll
			backoff, ceiling = time.Millisecond, 500*time.Millisecond
		case <-timer.C:
		case <-ctx.Done():
			return x, errs.Wrap(errs.CodeDeadline, ctx.Err(), "waiting for workflow "+id)
		}
		read = true
	}
}

// Awaited lists the runs whose Result a caller in this process waits for
// (a virtual clock may skip ahead for them while nothing else runs).
func (w *Engine) Awaited() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]string, 0, len(w.waiters))
	for id := range w.waiters {
		ids = append(ids, id)
	}
	return ids
}

func (w *Engine) dropWaiter(id string, ch chan handedEnd) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.waiters[id]
	for i, c := range ws {
		if c == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(w.waiters, id)
	} else {
		w.waiters[id] = ws
	}
}

// handedEnd is what Result's waiters in this process are handed: a run's
// end as its replay wrote it (or, not terminal, a nudge to read the row).
// stamp, from Engine.ends, was taken before the end was written: a wait
// that began after it (a higher stamp of its own) may have begun after a
// resume or retry reopened the run, so the end may be an older one than
// the waiter asks for, and the waiter reads the row instead. A wait that
// began before gets the end as it is: it was written after the wait began.
type handedEnd struct {
	x     store.Execution
	stamp int64
}

// nudge tells the waiters in this process that the run stopped executing
// here without handing them a result: they read the database instead.
// (A row without a terminal status is the nudge.)
func (w *Engine) nudge(id string) { w.notifyLocal(store.Execution{ID: id}, 0) }

// notifyLocal hands a finished run, its end written after stamp was taken
// from w.ends, to the waiters in this process.
func (w *Engine) notifyLocal(x store.Execution, stamp int64) {
	w.pushEnded(x)
	w.handOver(x, stamp)
}

// nudgeWaiters makes the waiters in this process read the run's row now.
func (w *Engine) nudgeWaiters(id string) { w.handOver(store.Execution{ID: id}, 0) }

// handOver gives x to the waiters in this process: a finished run as
// written here after stamp was taken, or (a row without a terminal status)
// a nudge.
func (w *Engine) handOver(x store.Execution, stamp int64) {
	w.mu.Lock()
	ws := w.waiters[x.ID]
	w.mu.Unlock()
	for _, c := range ws {
		select {
		case c <- handedEnd{x: x, stamp: stamp}:
		default:
		}
	}
}

func (w *Engine) String() string { return fmt.Sprintf("workflows on %s", w.e.Address()) }

// StepAttempts returns every recorded attempt of a run's steps from the
// introspection tables (empty when the store keeps none).
func (w *Engine) StepAttempts(ctx context.Context, id string) ([]store.StepRecord, error) {
	if w.intro.in == nil {
		return nil, nil
	}
	return w.intro.in.RunSteps(ctx, id)
}
