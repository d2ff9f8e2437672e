// The retention cases runRetention runs, one function each: what a sweep
// deletes, what it keeps, its batches, OldestKept.

package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// A finished run goes with its journal, signal, start context,
// introspection rows and start message with reply; a sweep as of an
// instant before it finished keeps it; the same id starts afresh after.
func testSweepFinishedRun(t *testing.T, e *retEnv) {
	ctx := ctxT(t)
	sm := e.start(t, "wfA", "")
	e.journal(t, "wfA", 3)
	wake := &store.Message{Shard: retShard, EntityType: retType, EntityID: "wfA", Tag: "signal", DedupeKey: "wf-signal:wfA:go"}
	if !must(e.w.SendSignal(ctx, store.Signal{ExecutionID: "wfA", Name: "go", Payload: []byte(`1`)}, wake))(t) {
		t.Fatal("signal not stored")
	}
	now := time.Now()
	check(t, e.in.Record(ctx, store.IntrospectionBatch{
		Runs: []store.RunRecord{{ExecutionID: "wfA", Name: "order", Status: store.ExecCompleted, StartedAt: now, UpdatedAt: now, FinishedAt: now}},
		Steps: []store.StepRecord{
			{ExecutionID: "wfA", Seq: 0, Name: "s0", Kind: store.JournalStep, Attempt: 1, Status: "completed", StartedAt: now},
			{ExecutionID: "wfA", Seq: 1, Name: "s1", Kind: store.JournalStep, Attempt: 1, Status: "failed", StartedAt: now},
			{ExecutionID: "wfA", Seq: 1, Name: "s1", Kind: store.JournalStep, Attempt: 2, Status: "completed", StartedAt: now},
		},
		Events: []store.EventRecord{{ExecutionID: "wfA", At: now, Kind: "started"}, {ExecutionID: "wfA", At: now, Kind: "completed"}},
	}))
	before := e.cut(t) // wfA has not finished yet
	e.finish(t, "wfA", store.ExecCompleted, sm)
	after := e.cut(t)

	expectRows(t, "sweep as of before the finish", e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: before, DeadBefore: before}), map[string]int64{})
	e.intact(t, "wfA", store.ExecCompleted, 3)
	expectRows(t, "sweep with no cut-off", e.sweep(t, store.SweepRequest{Kind: store.SweepRuns}), map[string]int64{})
	e.intact(t, "wfA", store.ExecCompleted, 3)

	b := e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: after, DeadBefore: after})
	expectRows(t, "sweep as of after the finish", b, map[string]int64{
		store.TableExecutions: 1, store.TableJournal: 3, store.TableSignals: 1, store.TableStartContexts: 1,
		store.TableRuns: 1, store.TableRunSteps: 3, store.TableRunEvents: 2, store.TableMessages: 1, store.TableReplies: 1,
	})
	if b.More {
		t.Fatalf("one run in a batch of %d: more=true", store.DefaultSweepLimit)
	}
	e.gone(t, "wfA", sm)
	// The signal's wake-up is a message of its own, still pending: it is
	// not deleted with the run (it is undelivered).
	ms := must(e.d.ListMessages(ctx, store.MessageFilter{EntityType: retType, EntityID: "wfA"}))(t)
	if len(ms) != 1 || ms[0].Tag != "signal" || ms[0].State != store.StatePending {
		t.Fatalf("the run's undelivered wake-up must stay: %+v", ms)
	}
	expectRows(t, "a second sweep", e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: after, DeadBefore: after}), map[string]int64{})

	// The same id (the same idempotency key) starts a new run: the old
	// start message went with the old run.
	_, existing, res, err := e.w.StartExecution(ctx, retExec("wfA", ""), store.StartContext{}, retStart("wfA"), nil)
	check(t, err)
	if existing || res.Duplicate || res.ID == sm {
		t.Fatalf("a start after the sweep must be new: existing=%v %+v", existing, res)
	}
}

// Running, suspended on a long sleep, waiting for a signal or a child:
// no cut-off, however late, deletes an unfinished run or its rows.
func testSweepKeepsUnfinished(t *testing.T, e *retEnv) {
	ctx := ctxT(t)
	e.start(t, "running", "")
	e.journal(t, "running", 2)

	sm := e.start(t, "sleeper", "")
	e.journal(t, "sleeper", 1)
	timer := &store.Message{Shard: retShard, EntityType: retType, EntityID: "sleeper", Tag: "timer", DedupeKey: "sleeper:timer:1", Delay: 90 * 24 * time.Hour}
	timerID := must(e.d.Enqueue(ctx, timer, nil))(t).ID
	e.suspend(t, "sleeper", "sleep 1", sm)

	sm = e.start(t, "waiter", "")
	e.suspend(t, "waiter", "signal approve", sm)

	sm = e.start(t, "parent", "")
	e.suspend(t, "parent", "child parent/0", sm)
	e.start(t, "parent/0", "parent")

	late := must(e.d.Now(ctx))(t).Add(365 * 24 * time.Hour)
	expectRows(t, "runs a year on", e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: late, DeadBefore: late}), map[string]int64{})
	// The suspended runs' start messages were processed when they
	// suspended: as plain processed messages they go, their runs stay.
	expectRows(t, "processed messages a year on", e.sweep(t, store.SweepRequest{Kind: store.SweepProcessed, Before: late}),
		map[string]int64{store.TableMessages: 3, store.TableReplies: 3})
	expectRows(t, "dead letters a year on", e.sweep(t, store.SweepRequest{Kind: store.SweepDead, Before: late}), map[string]int64{})
	expectRows(t, "runs after the messages", e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: late, DeadBefore: late}), map[string]int64{})
	e.intact(t, "running", store.ExecRunning, 2)
	e.intact(t, "sleeper", store.ExecSuspended, 1)
	e.intact(t, "waiter", store.ExecSuspended, 0)
	e.intact(t, "parent", store.ExecSuspended, 0)
	e.intact(t, "parent/0", store.ExecRunning, 0)
	m := must(e.d.GetMessage(ctx, timerID))(t)
	if m.State != store.StatePending {
		t.Fatalf("the sleeper's timer must stay pending: %+v", m)
	}
	// A suspended run still waits on its timer and may be signalled: both
	// still work after the sweep.
	if !must(e.w.SendSignal(ctx, store.Signal{ExecutionID: "waiter", Name: "approve", Payload: []byte(`1`)},
		&store.Message{Shard: retShard, EntityType: retType, EntityID: "waiter", Tag: "signal", DedupeKey: "wf-signal:waiter:approve"}))(t) {
		t.Fatal("signal to a kept waiter not stored")
	}
}

// A finished child stays while its parent is unfinished (the parent may
// start it again and must find it); it goes once the parent finished, and
// so does a child whose parent is gone.
func testSweepChildren(t *testing.T, e *retEnv) {
	psm := e.start(t, "p", "")
	e.suspend(t, "p", "child p/0", psm)
	c0 := e.finished(t, "p/0", "p")
	c1 := e.finished(t, "orphan/0", "orphan") // its parent never existed (or was deleted)
	cut := e.cut(t)
	b := e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: cut, DeadBefore: cut})
	if b.Rows[store.TableExecutions] != 1 {
		t.Fatalf("only the orphaned child may go: %v", b.Rows)
	}
	e.intact(t, "p/0", store.ExecCompleted, 3)
	e.intact(t, "p", store.ExecSuspended, 0)
	e.gone(t, "orphan/0", c1)

	e.finish(t, "p", store.ExecCompleted, 0)
	cut = e.cut(t)
	b = e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: cut, DeadBefore: cut})
	if b.Rows[store.TableExecutions] != 2 {
		t.Fatalf("the finished parent and its child go: %v", b.Rows)
	}
	e.gone(t, "p", 0)
	e.gone(t, "p/0", c0)
}

// A run whose start message is undelivered, or a dead letter younger than
// the dead-letter cut-off, stays with that message.
func testSweepStartMessage(t *testing.T, e *retEnv) {
	ctx := ctxT(t)
	// claimed: finished without completing its start message
	claimed := e.start(t, "claimed", "")
	e.finish(t, "claimed", store.ExecCompleted, 0)
	// pending: started without a claim, finished without running it
	_, _, res, err := e.w.StartExecution(ctx, retExec("pending", ""), store.StartContext{}, retStart("pending"), nil)
	check(t, err)
	pending := res.ID
	e.finish(t, "pending", store.ExecFailed, 0)
	// cancelled while nobody hosted it: its start message is dead
	_, _, res, err = e.w.StartExecution(ctx, retExec("cancelled", ""), store.StartContext{}, retStart("cancelled"), nil)
	check(t, err)
	dead := res.ID
	reason := errs.Encode(errs.New(errs.CodeCancelled, "cancelled"))
	early := e.cut(t)
	ok, n, err := e.b.CancelExecution(ctx, store.ExecutionCancel{ID: "cancelled", EntityType: retType, Error: reason, LastError: "run cancelled", ReplyErr: reason})
	check(t, err)
	if !ok || n != 1 {
		t.Fatalf("cancel: %v %d", ok, n)
	}
	cut := e.cut(t)

	expectRows(t, "runs with an undelivered or young dead start message", e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: cut, DeadBefore: early}), map[string]int64{})
	expectRows(t, "no dead-letter cut-off", e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: cut}), map[string]int64{})
	e.intact(t, "claimed", store.ExecCompleted, 0)
	e.intact(t, "pending", store.ExecFailed, 0)
	e.intact(t, "cancelled", store.ExecCancelled, 0)
	for id, state := range map[int64]store.MessageState{claimed: store.StateClaimed, pending: store.StatePending, dead: store.StateDead} {
		if m := must(e.d.GetMessage(ctx, id))(t); m.State != state {
			t.Fatalf("start message %d: %s, want %s", id, m.State, state)
		}
	}
	// Once the dead letter is older than its cut-off, the run goes with it.
	b := e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: cut, DeadBefore: cut})
	expectRows(t, "the cancelled run with its old dead start message", b, map[string]int64{
		store.TableExecutions: 1, store.TableStartContexts: 1, store.TableMessages: 1, store.TableReplies: 1,
	})
	e.gone(t, "cancelled", dead)
	e.intact(t, "claimed", store.ExecCompleted, 0)
	e.intact(t, "pending", store.ExecFailed, 0)
}

// A child's id grows with its depth; past the width of the dedupe column
// the stores keep a hash of the start message's key. The sweep must find
// the start message all the same, to keep and to delete.
func testSweepLongID(t *testing.T, e *retEnv) {
	ctx := ctxT(t)
	// 190 fits MariaDB's id column and hashes there (191 bytes of key);
	// 250 hashes on PostgreSQL (200).
	lengths := []int{190}
	if dl := e.d.Dialect(); dl != store.MariaDB && dl != store.MySQL {
		lengths = append(lengths, 250)
	}
	reason := errs.Encode(errs.New(errs.CodeCancelled, "cancelled"))
	for _, n := range lengths {
		long := "wf_" + strings.Repeat("a", n-3)
		// a dead start message of a long id keeps its run
		_, _, res, err := e.w.StartExecution(ctx, retExec(long, ""), store.StartContext{}, retStart(long), nil)
		check(t, err)
		early := e.cut(t)
		_, _, err = e.b.CancelExecution(ctx, store.ExecutionCancel{ID: long, EntityType: retType, Error: reason, LastError: "x", ReplyErr: reason})
		check(t, err)
		cut := e.cut(t)
		expectRows(t, fmt.Sprintf("an id of %d bytes with a young dead start message", n),
			e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: cut, DeadBefore: early}), map[string]int64{})
		e.intact(t, long, store.ExecCancelled, 0)
		expectRows(t, fmt.Sprintf("an id of %d bytes", n), e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: cut, DeadBefore: cut}), map[string]int64{
			store.TableExecutions: 1, store.TableStartContexts: 1, store.TableMessages: 1, store.TableReplies: 1,
		})
		e.gone(t, long, res.ID)

		// a finished run with a long id loses its processed start message
		long2 := "wf_" + strings.Repeat("b", n-3)
		sm := e.finished(t, long2, "")
		cut = e.cut(t)
		b := e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: cut, DeadBefore: cut})
		if b.Rows[store.TableMessages] != 1 {
			t.Fatalf("the start message of an id of %d bytes: %v", n, b.Rows)
		}
		e.gone(t, long2, sm)
		_, existing, res, err := e.w.StartExecution(ctx, retExec(long2, ""), store.StartContext{}, retStart(long2), nil)
		check(t, err)
		if existing || res.Duplicate {
			t.Fatalf("an id of %d bytes starts afresh after the sweep: existing=%v %+v", n, existing, res)
		}
	}
}

// Processed messages go with their replies once processed before the
// cut-off: until then their dedupe key still answers with the reply, after
// it the key makes a new message. Undelivered messages never go.
func testSweepProcessed(t *testing.T, e *retEnv) {
	ctx := ctxT(t)
	old := e.processed(t, plain("1", "k-old"))
	pendingDue := must(e.d.Enqueue(ctx, plain("2", "k-due"), nil))(t).ID
	later := plain("3", "")
	later.Delay = 90 * 24 * time.Hour
	pendingLater := must(e.d.Enqueue(ctx, later, nil))(t).ID
	claimed := must(e.d.Enqueue(ctx, plain("4", ""), e.claim()))(t).ID
	deadID := e.dead(t, plain("5", ""))
	cut := e.cut(t)
	young := e.processed(t, plain("6", "k-young"))

	dup := must(e.d.Enqueue(ctx, plain("1", "k-old"), nil))(t)
	if !dup.Duplicate || dup.ID != old || dup.Reply == nil {
		t.Fatalf("inside the window a repeated key answers with the stored reply: %+v", dup)
	}
	b := e.sweep(t, store.SweepRequest{Kind: store.SweepProcessed, Before: cut})
	expectRows(t, "processed before the cut-off", b, map[string]int64{store.TableMessages: 1, store.TableReplies: 1})
	if _, err := e.d.GetMessage(ctx, old); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("old processed message: want not found, got %v", err)
	}
	if r := must(e.d.GetReply(ctx, old))(t); r != nil {
		t.Fatalf("old reply left: %+v", r)
	}
	for id, state := range map[int64]store.MessageState{pendingDue: store.StatePending, pendingLater: store.StatePending,
		claimed: store.StateClaimed, deadID: store.StateDead, young: store.StateProcessed} {
		if m := must(e.d.GetMessage(ctx, id))(t); m.State != state {
			t.Fatalf("message %d: %s, want %s", id, m.State, state)
		}
	}
	if r := must(e.d.GetReply(ctx, young))(t); r == nil {
		t.Fatal("the young message's reply must stay")
	}
	again := must(e.d.Enqueue(ctx, plain("1", "k-old"), nil))(t)
	if again.Duplicate || again.ID == old {
		t.Fatalf("after the window the same key is a new message: %+v", again)
	}

	// However late the cut-off, only processed messages go.
	late := must(e.d.Now(ctx))(t).Add(365 * 24 * time.Hour)
	expectRows(t, "a year on", e.sweep(t, store.SweepRequest{Kind: store.SweepProcessed, Before: late}), map[string]int64{store.TableMessages: 1, store.TableReplies: 1})
	for id, state := range map[int64]store.MessageState{pendingDue: store.StatePending, pendingLater: store.StatePending,
		claimed: store.StateClaimed, deadID: store.StateDead, again.ID: store.StatePending} {
		if m := must(e.d.GetMessage(ctx, id))(t); m.State != state {
			t.Fatalf("a year on, message %d: %s, want %s", id, m.State, state)
		}
	}
}

// Dead letters go, with their replies, only once dead-lettered before
// their own cut-off; processed messages are not dead letters.
func testSweepDead(t *testing.T, e *retEnv) {
	ctx := ctxT(t)
	oldDead := e.dead(t, plain("1", "k1"))
	proc := e.processed(t, plain("2", ""))
	cut := e.cut(t)
	youngDead := e.dead(t, plain("3", ""))

	b := e.sweep(t, store.SweepRequest{Kind: store.SweepDead, Before: cut})
	expectRows(t, "dead letters before the cut-off", b, map[string]int64{store.TableMessages: 1, store.TableReplies: 1})
	if _, err := e.d.GetMessage(ctx, oldDead); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("old dead letter: want not found, got %v", err)
	}
	if m := must(e.d.GetMessage(ctx, youngDead))(t); m.State != store.StateDead {
		t.Fatalf("young dead letter: %+v", m)
	}
	if r := must(e.d.GetReply(ctx, youngDead))(t); r == nil {
		t.Fatal("the young dead letter's reply must stay")
	}
	if m := must(e.d.GetMessage(ctx, proc))(t); m.State != store.StateProcessed {
		t.Fatalf("a dead-letter sweep leaves processed messages: %+v", m)
	}
	// and a processed sweep leaves dead letters, however late
	late := must(e.d.Now(ctx))(t).Add(365 * 24 * time.Hour)
	e.sweep(t, store.SweepRequest{Kind: store.SweepProcessed, Before: late})
	if m := must(e.d.GetMessage(ctx, youngDead))(t); m.State != store.StateDead {
		t.Fatalf("a processed sweep must leave dead letters: %+v", m)
	}
	// a replayed dead letter is pending: no cut-off takes it
	check(t, e.d.ReplayDead(ctx, youngDead))
	e.sweep(t, store.SweepRequest{Kind: store.SweepDead, Before: late})
	if m := must(e.d.GetMessage(ctx, youngDead))(t); m.State != store.StatePending {
		t.Fatalf("a replayed dead letter must stay: %+v", m)
	}
}

// Runner rows silent since before the cut-off go, unless a shard lock row
// names them (a frozen owner is fenced, not forgotten).
func testSweepRunners(t *testing.T, e *retEnv) {
	ctx := ctxT(t)
	check(t, e.d.RegisterRunner(ctx, store.Runner{Address: "gone:1", ReplicaID: "g", Healthy: true}))
	check(t, e.d.RegisterRunner(ctx, store.Runner{Address: retOwner, ReplicaID: "owner", Healthy: true}))
	cut := e.cut(t)
	check(t, e.d.RegisterRunner(ctx, store.Runner{Address: "new:1", ReplicaID: "n", Healthy: true}))
	b := e.sweep(t, store.SweepRequest{Kind: store.SweepRunners, Before: cut})
	expectRows(t, "runners", b, map[string]int64{store.TableRunners: 1})
	var left []string
	for _, r := range must(e.d.ListRunners(ctx))(t) {
		left = append(left, r.Address)
	}
	if strings.Join(left, ",") != "new:1,"+retOwner {
		t.Fatalf("runners left: %v, want new:1 and the lock owner", left)
	}
}

// Batches hold at most Limit rows of the kind and say whether more may be
// left; a dry run deletes nothing and, batch after batch, counts it all.
func testSweepBatches(t *testing.T, e *retEnv) {
	ctx := ctxT(t)
	for i := range 7 {
		e.finished(t, fmt.Sprintf("b%d", i), "")
	}
	for i := range 5 {
		e.processed(t, plain(fmt.Sprint(i), ""))
	}
	cut := e.cut(t)

	// dry run, in batches of 3: 7 runs (3 journal entries, a start context,
	// a start message and its reply each), and 12 processed messages (the
	// runs' start messages are processed messages too: until the runs go,
	// a dry run counts them twice)
	want := map[store.SweepKind]map[string]int64{
		store.SweepRuns:      {store.TableExecutions: 7, store.TableJournal: 21, store.TableStartContexts: 7, store.TableMessages: 7, store.TableReplies: 7},
		store.SweepProcessed: {store.TableMessages: 12, store.TableReplies: 12},
	}
	for kind, rows := range want {
		total := store.SweepBatch{}
		after, batches := "", 0
		for {
			b := e.sweep(t, store.SweepRequest{Kind: kind, Before: cut, DeadBefore: cut, Limit: 3, DryRun: true, After: after})
			batches++
			for k, v := range b.Rows {
				total.Add(k, v)
			}
			if !b.More {
				break
			}
			if b.Next == "" || b.Next == after {
				t.Fatalf("dry run of %s: batch %d is full but its cursor does not move (%q)", kind, batches, b.Next)
			}
			after = b.Next
			if batches > 10 {
				t.Fatalf("dry run of %s does not end", kind)
			}
		}
		expectRows(t, "dry run of "+string(kind), total, rows)
	}
	for i := range 7 {
		e.intact(t, fmt.Sprintf("b%d", i), store.ExecCompleted, 3)
	}
	if ms := must(e.d.ListMessages(ctx, store.MessageFilter{State: store.StateProcessed}))(t); len(ms) != 12 {
		t.Fatalf("a dry run deletes nothing: %d processed messages left, want 12", len(ms))
	}

	var runs []int64
	for {
		b := e.sweep(t, store.SweepRequest{Kind: store.SweepRuns, Before: cut, DeadBefore: cut, Limit: 3})
		runs = append(runs, b.Rows[store.TableExecutions])
		if b.Rows[store.TableExecutions] > 3 {
			t.Fatalf("a batch of 3 deleted %v", b.Rows)
		}
		if !b.More || len(runs) > 5 {
			break
		}
	}
	if fmt.Sprint(runs) != "[3 3 1]" {
		t.Fatalf("runs per batch: %v, want [3 3 1]", runs)
	}
	b := e.sweep(t, store.SweepRequest{Kind: store.SweepProcessed, Before: cut, Limit: 4})
	if b.Rows[store.TableMessages] != 4 || !b.More {
		t.Fatalf("a batch of 4 processed messages: %+v", b)
	}
	b = e.sweep(t, store.SweepRequest{Kind: store.SweepProcessed, Before: cut, Limit: 4})
	if b.Rows[store.TableMessages] != 1 || b.More {
		t.Fatalf("the last processed message: %+v", b)
	}
}

// OldestKept reports the oldest finished run, processed message and dead
// letter, and zero once they are gone.
func testOldestKept(t *testing.T, e *retEnv) {
	ctx := ctxT(t)
	o := must(e.sw.OldestKept(ctx))(t)
	if o.Now.IsZero() || !o.Run.IsZero() || !o.Processed.IsZero() || !o.Dead.IsZero() {
		t.Fatalf("an empty store keeps nothing: %+v", o)
	}
	start := e.cut(t)
	e.finished(t, "o1", "")
	e.start(t, "o2", "") // unfinished: not counted
	e.processed(t, plain("1", ""))
	e.dead(t, plain("2", ""))
	cut := e.cut(t)
	o = must(e.sw.OldestKept(ctx))(t)
	for what, at := range map[string]time.Time{"run": o.Run, "processed": o.Processed, "dead": o.Dead} {
		if at.Before(start) || at.After(cut) {
			t.Fatalf("oldest %s kept at %v, want between %v and %v", what, at, start, cut)
		}
	}
	if o.Now.Before(cut) {
		t.Fatalf("now %v is before %v", o.Now, cut)
	}
	for _, k := range []store.SweepKind{store.SweepRuns, store.SweepProcessed, store.SweepDead} {
		e.sweep(t, store.SweepRequest{Kind: k, Before: cut, DeadBefore: cut})
	}
	o = must(e.sw.OldestKept(ctx))(t)
	if !o.Run.IsZero() || !o.Dead.IsZero() {
		t.Fatalf("after the sweep: %+v", o)
	}
	// o2's start message is still claimed; the only processed rows were
	// swept
	if !o.Processed.IsZero() {
		t.Fatalf("after the sweep, processed: %v", o.Processed)
	}
}
