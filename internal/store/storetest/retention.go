package storetest

// Retention (store.Retention): what a sweep deletes, what it must never
// delete, and its batches. No case sleeps out a retention: every sweep is
// made "as of" an instant read from the store's clock (a cut-off), so rows
// made before the instant count as old and rows made after it as young.

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// runRetention runs the retention cases.
func runRetention(t *testing.T, factory Factory) {
	get := func(t *testing.T) *retEnv {
		d, clock := open(t, factory)
		e := &retEnv{d: d, clock: clock, sw: d, w: d, in: d, b: d}
		_, e.epoch = own(t, d, retOwner, retShard)
		return e
	}
	t.Run("FinishedRunGoesWithItsRows", func(t *testing.T) { testSweepFinishedRun(t, get(t)) })
	t.Run("UnfinishedRunsStay", func(t *testing.T) { testSweepKeepsUnfinished(t, get(t)) })
	t.Run("ChildOfLiveParentStays", func(t *testing.T) { testSweepChildren(t, get(t)) })
	t.Run("StartMessageKeepsRun", func(t *testing.T) { testSweepStartMessage(t, get(t)) })
	t.Run("LongRunID", func(t *testing.T) { testSweepLongID(t, get(t)) })
	t.Run("ProcessedMessages", func(t *testing.T) { testSweepProcessed(t, get(t)) })
	t.Run("DeadLetters", func(t *testing.T) { testSweepDead(t, get(t)) })
	t.Run("Runners", func(t *testing.T) { testSweepRunners(t, get(t)) })
	t.Run("BatchesAndDryRun", func(t *testing.T) { testSweepBatches(t, get(t)) })
	t.Run("OldestKept", func(t *testing.T) { testOldestKept(t, get(t)) })
}

const (
	retOwner = "ret:1"
	retShard = "default/1"
	retType  = "workflow/order"
)

type retEnv struct {
	d     store.Driver
	sw    store.Retention
	w     store.Workflows
	in    store.Introspection
	b     store.Backlog
	epoch int64
	clock *Clock
}

func (e *retEnv) fence() store.Fence { return store.Fence{Owner: retOwner, Epoch: e.epoch} }

func (e *retEnv) claim() *store.EnqueueClaim {
	return &store.EnqueueClaim{Owner: retOwner, Epoch: e.epoch, ClaimTTL: time.Hour}
}

// cut reads the store's clock between two short moves of it: every row
// written before the call is older than the instant returned, every row
// written after it younger.
func (e *retEnv) cut(t *testing.T) time.Time {
	t.Helper()
	e.clock.Advance(3 * time.Millisecond)
	now := must(e.d.Now(ctxT(t)))(t)
	e.clock.Advance(3 * time.Millisecond)
	return now
}

// sweep runs one batch and returns its counts.
func (e *retEnv) sweep(t *testing.T, req store.SweepRequest) store.SweepBatch {
	t.Helper()
	b, err := e.sw.Sweep(ctxT(t), req)
	if err != nil {
		t.Fatalf("sweep %s: %v", req.Kind, err)
	}
	return b
}

// expectRows compares a batch's counts with want (tables absent = 0).
func expectRows(t *testing.T, what string, got store.SweepBatch, want map[string]int64) {
	t.Helper()
	g := maps.Clone(got.Rows)
	if g == nil {
		g = map[string]int64{}
	}
	for k, v := range g {
		if v == 0 {
			delete(g, k)
		}
	}
	if !maps.Equal(g, want) {
		t.Fatalf("%s: rows %v, want %v", what, g, want)
	}
}

func retExec(id, parent string) store.Execution {
	return store.Execution{ID: id, Name: "order", Shard: retShard, Input: []byte(`{}`), ParentID: parent, ParentClose: "terminate"}
}

func retStart(id string) *store.Message {
	return &store.Message{Shard: retShard, EntityType: retType, EntityID: id, Tag: "start", Payload: []byte(`{}`), DedupeKey: store.RunStartKey(id)}
}

// start starts run id (child of parent when not empty), its start message
// claimed by this env, and returns the start message's id.
func (e *retEnv) start(t *testing.T, id, parent string) int64 {
	t.Helper()
	_, existing, res, err := e.w.StartExecution(ctxT(t), retExec(id, parent), store.StartContext{Source: "api", ParentID: parent}, retStart(id), e.claim())
	check(t, err)
	if existing || res.Duplicate || res.ClaimedEpoch != e.epoch {
		t.Fatalf("start %s: existing=%v %+v", id, existing, res)
	}
	return res.ID
}

// journal appends steps 0..n-1 to run id.
func (e *retEnv) journal(t *testing.T, id string, n int) {
	t.Helper()
	for seq := range n {
		check(t, store.AppendJournal(ctxT(t), e.w, retShard, e.fence(), store.JournalEntry{
			ExecutionID: id, Seq: seq, Kind: store.JournalStep, Name: fmt.Sprintf("s%d", seq), Result: []byte(`1`), Attempts: 1, Runner: retOwner, StartedAt: time.Now()}))
	}
}

// finish moves run id to status, completing message msg (0: none) with it
// as the runner does.
func (e *retEnv) finish(t *testing.T, id string, status store.ExecStatus, msg int64) {
	t.Helper()
	out, err := e.w.WriteRuns(ctxT(t), []store.RunWrite{{Shard: retShard, Fence: e.fence(), Message: msg,
		Update: &store.ExecutionUpdate{ID: id, Status: status, Output: []byte(`"done"`), Runner: retOwner}}})
	check(t, err)
	check(t, out[0])
}

// suspend moves run id to suspended on what, completing message msg.
func (e *retEnv) suspend(t *testing.T, id, what string, msg int64) {
	t.Helper()
	out, err := e.w.WriteRuns(ctxT(t), []store.RunWrite{{Shard: retShard, Fence: e.fence(), Message: msg,
		Update: &store.ExecutionUpdate{ID: id, Status: store.ExecSuspended, WaitingOn: what, Runner: retOwner}}})
	check(t, err)
	check(t, out[0])
}

// finished makes a run with a 3-step journal that completed through its
// start message, and returns the start message's id.
func (e *retEnv) finished(t *testing.T, id, parent string) int64 {
	t.Helper()
	sm := e.start(t, id, parent)
	e.journal(t, id, 3)
	e.finish(t, id, store.ExecCompleted, sm)
	return sm
}

// processed enqueues a message and completes it with a reply.
func (e *retEnv) processed(t *testing.T, m *store.Message) int64 {
	t.Helper()
	ctx := ctxT(t)
	res := must(e.d.Enqueue(ctx, m, e.claim()))(t)
	if res.ClaimedEpoch == 0 {
		t.Fatalf("message not claimed at enqueue: %+v", res)
	}
	check(t, e.d.Complete(ctx, store.Completion{MessageID: res.ID, Shard: m.Shard, Fence: e.fence(), Payload: []byte(`"ok"`)}))
	return res.ID
}

// dead enqueues a message and dead-letters it.
func (e *retEnv) dead(t *testing.T, m *store.Message) int64 {
	t.Helper()
	ctx := ctxT(t)
	res := must(e.d.Enqueue(ctx, m, e.claim()))(t)
	if res.ClaimedEpoch == 0 {
		t.Fatalf("message not claimed at enqueue: %+v", res)
	}
	check(t, e.d.DeadLetter(ctx, e.fence(), m.Shard, res.ID, "gave up", errs.Encode(errs.New(errs.CodeDeadLettered, "gave up"))))
	return res.ID
}

func plain(id, dedupe string) *store.Message {
	return &store.Message{Shard: retShard, EntityType: "order", EntityID: id, Tag: "t", Payload: []byte(`{}`), DedupeKey: dedupe}
}

// gone fails unless run id has no row left in any table the store
// exposes, its start message (startMsg, when not 0) and reply included.
func (e *retEnv) gone(t *testing.T, id string, startMsg int64) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := e.w.GetExecution(ctx, id); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("run %s: want not found, got %v", id, err)
	}
	if _, err := e.w.GetStartContext(ctx, id); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("start context of %s: want not found, got %v", id, err)
	}
	if j := must(e.w.Journal(ctx, id))(t); len(j) != 0 {
		t.Fatalf("journal of %s left: %+v", id, j)
	}
	if s := must(e.w.GetSignal(ctx, id, "go"))(t); s != nil {
		t.Fatalf("signal of %s left: %+v", id, s)
	}
	if s := must(e.in.RunSteps(ctx, id))(t); len(s) != 0 {
		t.Fatalf("step records of %s left: %+v", id, s)
	}
	if ev := must(e.in.RunEvents(ctx, id))(t); len(ev) != 0 {
		t.Fatalf("event records of %s left: %+v", id, ev)
	}
	if startMsg != 0 {
		if _, err := e.d.GetMessage(ctx, startMsg); !errors.Is(err, errs.ErrNotFound) {
			t.Fatalf("start message %d of %s: want not found, got %v", startMsg, id, err)
		}
		if r := must(e.d.GetReply(ctx, startMsg))(t); r != nil {
			t.Fatalf("reply of the start message of %s left: %+v", id, r)
		}
	}
}

// intact fails unless run id is stored with status and a journal of n
// entries.
func (e *retEnv) intact(t *testing.T, id string, status store.ExecStatus, n int) {
	t.Helper()
	ctx := ctxT(t)
	x, err := e.w.GetExecution(ctx, id)
	if err != nil {
		t.Fatalf("run %s must be kept: %v", id, err)
	}
	if x.Status != status {
		t.Fatalf("run %s: status %s, want %s", id, x.Status, status)
	}
	if j := must(e.w.Journal(ctx, id))(t); len(j) != n {
		t.Fatalf("run %s: %d journal entries, want %d", id, len(j), n)
	}
	if _, err := e.w.GetStartContext(ctx, id); err != nil {
		t.Fatalf("start context of %s must be kept: %v", id, err)
	}
}
