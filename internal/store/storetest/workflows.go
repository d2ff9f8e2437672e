package storetest

// The workflow part of the conformance suite: executions, journal, signals,
// cancellation and the introspection tables.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// runWorkflows runs the workflow cases.
func runWorkflows(t *testing.T, factory Factory) {
	get := func(t *testing.T) (store.Driver, store.Workflows, store.Introspection, *Clock) {
		d, clock := open(t, factory)
		return d, d, d, clock
	}
	t.Run("StartIdempotent", func(t *testing.T) { d, w, _, _ := get(t); testStartExecution(t, d, w) })
	t.Run("StartBatch", func(t *testing.T) { d, w, _, _ := get(t); testStartBatch(t, d, w) })
	t.Run("Poll", func(t *testing.T) { d, w, _, _ := get(t); testPollExecutions(t, d, w) })
	t.Run("JournalFenced", func(t *testing.T) { d, w, _, _ := get(t); testJournal(t, d, w) })
	t.Run("WriteRuns", func(t *testing.T) { d, w, _, _ := get(t); testWriteRuns(t, d, w) })
	t.Run("UpdateAndList", func(t *testing.T) { d, w, _, c := get(t); testUpdateExecution(t, d, w, c) })
	t.Run("ListPages", func(t *testing.T) { _, w, _, _ := get(t); testListPages(t, w) })
	t.Run("Signals", func(t *testing.T) { d, w, _, _ := get(t); testSignals(t, d, w) })
	t.Run("Cancel", func(t *testing.T) { d, w, _, _ := get(t); testCancel(t, d, w) })
	t.Run("Reopen", func(t *testing.T) { d, w, _, _ := get(t); testReopen(t, d, w) })
	t.Run("Introspection", func(t *testing.T) { d, _, _, _ := get(t); testIntrospection(t, d) })
}

func startMsg(id string) *store.Message {
	return &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: id, Tag: "start", Payload: []byte(`{}`), DedupeKey: "wf-start:" + id}
}

func newExec(id string) store.Execution {
	return store.Execution{ID: id, Name: "order", Shard: "default/1", Key: "k-" + id, Input: []byte(`{"n":1}`), ParentID: "", ParentClose: "terminate"}
}

func testStartExecution(t *testing.T, d store.Driver, w store.Workflows) {
	ctx := ctxT(t)
	sc := store.StartContext{Subject: "user:7", Trace: "00-abc-def-01", Source: "api", ParentID: "p1", ParentClose: "abandon"}
	x, existing, res, err := w.StartExecution(ctx, newExec("wf1"), sc, startMsg("wf1"), nil)
	check(t, err)
	if existing || x.Status != store.ExecRunning || x.CreatedAt.IsZero() || res.ID <= 0 || res.Duplicate {
		t.Fatalf("first start: %+v existing=%v res=%+v", x, existing, res)
	}
	x2, existing, _, err := w.StartExecution(ctx, store.Execution{ID: "wf1", Name: "order", Shard: "default/1", Input: []byte(`{"n":2}`)}, store.StartContext{}, startMsg("wf1"), nil)
	check(t, err)
	if !existing || string(x2.Input) != `{"n":1}` || x2.Key != "k-wf1" {
		t.Fatalf("second start must return the stored run: %+v existing=%v", x2, existing)
	}
	msgs := must(d.ListMessages(ctx, store.MessageFilter{EntityType: "workflow/order"}))(t)
	if len(msgs) != 1 || msgs[0].EntityID != "wf1" || msgs[0].Tag != "start" {
		t.Fatalf("exactly one start message: %+v", msgs)
	}
	got := must(w.GetStartContext(ctx, "wf1"))(t)
	if got.ExecutionID != "wf1" || got.Subject != "user:7" || got.Trace != "00-abc-def-01" || got.Source != "api" || got.ParentID != "p1" || got.ParentClose != "abandon" {
		t.Fatalf("start context: %+v", got)
	}
	g := must(w.GetExecution(ctx, "wf1"))(t)
	if g.Name != "order" || g.Shard != "default/1" || g.ParentClose != "terminate" || string(g.Input) != `{"n":1}` {
		t.Fatalf("get: %+v", g)
	}
	if _, err := w.GetExecution(ctx, "nope"); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
	// claim at insert for the owner
	_, e := own(t, d, "me:1", "default/1")
	_, _, res, err = w.StartExecution(ctx, newExec("wf2"), store.StartContext{}, startMsg("wf2"), &store.EnqueueClaim{Owner: "me:1", Epoch: e, ClaimTTL: time.Minute})
	check(t, err)
	if res.ClaimedEpoch != e {
		t.Fatalf("start by the owner must come back claimed: %+v", res)
	}
}

// testPollExecutions: PollExecutions returns the stored rows of the ids
// that exist, each once, whatever the ids' number, order or repeats: a
// finished run whole, one still running without its input.
func testPollExecutions(t *testing.T, d store.Driver, w store.Workflows) {
	ctx := ctxT(t)
	if got := must(w.PollExecutions(ctx, nil))(t); len(got) != 0 {
		t.Fatalf("no ids: %+v", got)
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		_, _, _, err := w.StartExecution(ctx, newExec(id), store.StartContext{}, startMsg(id), nil)
		check(t, err)
	}
	_, e := own(t, d, "me:1", "default/1")
	check(t, store.UpdateExecution(ctx, w, store.ExecutionUpdate{ID: "m2", Shard: "default/1", Fence: store.Fence{Owner: "me:1", Epoch: e},
		Status: store.ExecCompleted, Output: []byte(`{"ok":true}`)}))
	want := map[string]store.Execution{"m1": must(w.GetExecution(ctx, "m1"))(t), "m2": must(w.GetExecution(ctx, "m2"))(t)}
	// m3 is left out; the ids are many (more than one statement's worth
	// where a store cuts them), repeated and out of order
	ids := make([]string, 1200)
	for i := range ids {
		ids[i] = fmt.Sprintf("none-%d", i)
	}
	ids[0], ids[700], ids[1199], ids[5] = "m2", "m1", "m2", "m1"
	got := must(w.PollExecutions(ctx, ids))(t)
	if len(got) != 2 {
		t.Fatalf("want m1 and m2 once each, got %d runs: %+v", len(got), got)
	}
	seen := map[string]bool{}
	for _, x := range got {
		exp, ok := want[x.ID]
		if !ok || seen[x.ID] {
			t.Fatalf("unexpected run %q in %+v", x.ID, got)
		}
		seen[x.ID] = true
		if x.ID == "m1" {
			if x.Input != nil {
				t.Fatalf("a running run comes without its input: %+v", x)
			}
			exp.Input = nil
		}
		if x.Name != exp.Name || x.Shard != exp.Shard || x.Key != exp.Key || x.Status != exp.Status || string(x.Input) != string(exp.Input) ||
			string(x.Output) != string(exp.Output) || x.ParentClose != exp.ParentClose || !x.CreatedAt.Equal(exp.CreatedAt) ||
			!x.UpdatedAt.Equal(exp.UpdatedAt) || !x.FinishedAt.Equal(exp.FinishedAt) {
			t.Fatalf("PollExecutions row differs from GetExecution's:\n%+v\n%+v", x, exp)
		}
	}
	if m2 := want["m2"]; m2.Status != store.ExecCompleted || string(m2.Input) != `{"n":1}` {
		t.Fatalf("finished run as read: %+v", m2)
	}
}

// testStartBatch: a batch of starts has StartExecution's semantics per
// start (one claimed at insert, out of id order). A batch with a run that
// exists either reports it per start or fails as a whole, writing nothing
// of the batch (the caller then starts them one by one).
func testStartBatch(t *testing.T, d store.Driver, w store.Workflows) {
	bs := d.Capabilities().BatchStarts
	if bs == nil {
		t.Skipf("the %s store starts runs one transaction each (no Capabilities.BatchStarts)", d.Dialect())
	}
	ctx := ctxT(t)
	_, _, _, err := w.StartExecution(ctx, newExec("old"), store.StartContext{}, startMsg("old"), nil)
	check(t, err)
	_, e := own(t, d, "me:1", "default/1")
	claim := &store.EnqueueClaim{Owner: "me:1", Epoch: e, ClaimTTL: time.Minute}
	reqs := []store.StartRequest{
		{Exec: newExec("b2"), Context: store.StartContext{Source: "batch", Subject: "s2"}, Message: startMsg("b2"), Claim: claim},
		{Exec: newExec("b1"), Context: store.StartContext{Source: "batch", Subject: "s1"}, Message: startMsg("b1")},
	}
	out, err := bs.StartExecutions(ctx, reqs)
	check(t, err)
	if len(out) != len(reqs) {
		t.Fatalf("%d outcomes for %d starts", len(out), len(reqs))
	}
	for i, o := range out {
		q := reqs[i]
		if o.Err != nil || o.Existing || o.Stored.ID != q.Exec.ID || o.Stored.Status != store.ExecRunning || o.Stored.CreatedAt.IsZero() || o.Result.ID <= 0 || q.Message.ID != o.Result.ID {
			t.Fatalf("start %s: %+v (message %+v)", q.Exec.ID, o, q.Message)
		}
		sc := must(w.GetStartContext(ctx, q.Exec.ID))(t)
		if sc.Source != "batch" || sc.Subject != q.Context.Subject {
			t.Fatalf("start context of %s: %+v", q.Exec.ID, sc)
		}
		if g := must(w.GetExecution(ctx, q.Exec.ID))(t); g.Status != store.ExecRunning || string(g.Input) != `{"n":1}` {
			t.Fatalf("stored run %s: %+v", q.Exec.ID, g)
		}
	}
	if out[0].Result.ClaimedEpoch != e || out[1].Result.ClaimedEpoch != 0 {
		t.Fatalf("only the start with a claim comes back claimed: %+v, %+v", out[0].Result, out[1].Result)
	}

	testStartBatchMixed(ctx, t, d, w, bs)
}

// testStartBatchMixed: a batch with a run that exists ("old") either reports
// it per start or fails as a whole, writing nothing; every run keeps exactly
// one start message.
func testStartBatchMixed(ctx context.Context, t *testing.T, d store.Driver, w store.Workflows, bs store.BatchStarter) {
	mixed, err := bs.StartExecutions(ctx, []store.StartRequest{
		{Exec: newExec("b4"), Message: startMsg("b4")},
		{Exec: newExec("old"), Message: startMsg("old")},
	})
	if err != nil {
		if _, gerr := w.GetExecution(ctx, "b4"); !errors.Is(gerr, errs.ErrNotFound) {
			t.Fatalf("a batch that failed as a whole (%v) must write nothing; b4: %v", err, gerr)
		}
	} else if mixed[0].Err != nil || mixed[0].Existing || mixed[1].Err != nil || !mixed[1].Existing || mixed[1].Stored.ID != "old" {
		t.Fatalf("a batch with a run that exists: %+v", mixed)
	}
	for _, id := range []string{"b1", "b2", "old"} {
		msgs := must(d.ListMessages(ctx, store.MessageFilter{EntityType: "workflow/order", EntityID: id}))(t)
		if len(msgs) != 1 {
			t.Fatalf("%s: exactly one start message, got %+v", id, msgs)
		}
	}
}

func testJournal(t *testing.T, d store.Driver, w store.Workflows) {
	ctx := ctxT(t)
	_, _, _, err := w.StartExecution(ctx, newExec("wf1"), store.StartContext{}, startMsg("wf1"), nil)
	check(t, err)
	entry := func(seq int, name string) store.JournalEntry {
		return store.JournalEntry{ExecutionID: "wf1", Seq: seq, Kind: store.JournalStep, Name: name, Result: []byte(fmt.Sprintf(`%d`, seq)), Attempts: 2, Runner: "me:1", StartedAt: time.Now()}
	}
	if err := store.AppendJournal(ctx, w, "default/1", store.Fence{Owner: "me:1", Epoch: 1}, entry(0, "a")); !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("journal write without the shard: %v", err)
	}
	_, e := own(t, d, "me:1", "default/1")
	f := store.Fence{Owner: "me:1", Epoch: e}
	check(t, store.AppendJournal(ctx, w, "default/1", f, entry(1, "b")))
	check(t, store.AppendJournal(ctx, w, "default/1", f, entry(0, "a")))
	bad := entry(1, "b")
	bad.Result = []byte(`"second"`)
	if err := store.AppendJournal(ctx, w, "default/1", f, bad); !errors.Is(err, errs.ErrAlreadyExists) {
		t.Fatalf("a journal entry is written once: %v", err)
	}
	failed := store.JournalEntry{ExecutionID: "wf1", Seq: 2, Kind: store.JournalSignal, Name: "approve", Error: errs.Encode(errs.New(errs.CodeDeadline, "timed out"))}
	check(t, store.AppendJournal(ctx, w, "default/1", f, failed))
	j := must(w.Journal(ctx, "wf1"))(t)
	if len(j) != 3 || j[0].Name != "a" || j[1].Name != "b" || string(j[1].Result) != "1" || j[1].Attempts != 2 || j[1].Runner != "me:1" || j[2].Kind != store.JournalSignal {
		t.Fatalf("journal: %+v", j)
	}
	if !errors.Is(errs.Decode(j[2].Error), errs.ErrDeadline) || j[1].FinishedAt.IsZero() || j[1].StartedAt.IsZero() {
		t.Fatalf("journal entry fields: %+v", j[2])
	}
}

func testUpdateExecution(t *testing.T, d store.Driver, w store.Workflows, clock *Clock) {
	ctx := ctxT(t)
	for i := 0; i < 3; i++ {
		_, _, _, err := w.StartExecution(ctx, newExec(fmt.Sprint("wf", i)), store.StartContext{}, startMsg(fmt.Sprint("wf", i)), nil)
		check(t, err)
		clock.Advance(5 * time.Millisecond)
	}
	u := store.ExecutionUpdate{ID: "wf0", Shard: "default/1", Fence: store.Fence{Owner: "me:1", Epoch: 7}, Status: store.ExecSuspended, WaitingOn: "sleep 1"}
	if err := store.UpdateExecution(ctx, w, u); !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("update without the shard: %v", err)
	}
	_, e := own(t, d, "me:1", "default/1")
	u.Fence.Epoch = e
	u.Runner = "me:1"
	check(t, store.UpdateExecution(ctx, w, u))
	x := must(w.GetExecution(ctx, "wf0"))(t)
	if x.Status != store.ExecSuspended || x.WaitingOn != "sleep 1" || x.Runner != "me:1" {
		t.Fatalf("suspended: %+v", x)
	}
	check(t, store.UpdateExecution(ctx, w, store.ExecutionUpdate{ID: "wf0", Shard: "default/1", Fence: u.Fence, Status: store.ExecCompleted, Output: []byte(`{"ok":true}`)}))
	x = must(w.GetExecution(ctx, "wf0"))(t)
	if x.Status != store.ExecCompleted || string(x.Output) != `{"ok":true}` || x.FinishedAt.IsZero() || x.WaitingOn != "" {
		t.Fatalf("completed: %+v", x)
	}
	if err := store.UpdateExecution(ctx, w, store.ExecutionUpdate{ID: "wf0", Shard: "default/1", Fence: u.Fence, Status: store.ExecFailed}); !errors.Is(err, errs.ErrAlreadyExists) {
		t.Fatalf("a terminal run never changes: %v", err)
	}
	failErr := errs.Encode(errs.New(errs.CodeHandler, "boom"))
	check(t, store.UpdateExecution(ctx, w, store.ExecutionUpdate{ID: "wf1", Shard: "default/1", Fence: u.Fence, Status: store.ExecFailed, Error: failErr}))
	all := must(w.ListExecutions(ctx, store.ExecutionFilter{}))(t)
	if len(all) != 3 || all[0].ID != "wf2" || all[2].ID != "wf0" {
		t.Fatalf("list newest first: %+v", all)
	}
	running := must(w.ListExecutions(ctx, store.ExecutionFilter{Status: store.ExecRunning}))(t)
	if len(running) != 1 || running[0].ID != "wf2" {
		t.Fatalf("list by status: %+v", running)
	}
	failed := must(w.ListExecutions(ctx, store.ExecutionFilter{Status: store.ExecFailed, Name: "order", Limit: 5}))(t)
	if len(failed) != 1 || !errors.Is(errs.Decode(failed[0].Error), errs.ErrHandler) {
		t.Fatalf("failed run: %+v", failed)
	}
	if l := must(w.ListExecutions(ctx, store.ExecutionFilter{Limit: 2}))(t); len(l) != 2 {
		t.Fatalf("limit: %d", len(l))
	}
	child := newExec("child")
	child.ParentID = "wf2"
	_, _, _, err := w.StartExecution(ctx, child, store.StartContext{ParentID: "wf2"}, startMsg("child"), nil)
	check(t, err)
	if l := must(w.ListExecutions(ctx, store.ExecutionFilter{ParentID: "wf2"}))(t); len(l) != 1 || l[0].ID != "child" {
		t.Fatalf("list children: %+v", l)
	}
}

func testSignals(t *testing.T, d store.Driver, w store.Workflows) {
	ctx := ctxT(t)
	_, _, _, err := w.StartExecution(ctx, newExec("wf1"), store.StartContext{}, startMsg("wf1"), nil)
	check(t, err)
	wake := func() *store.Message {
		return &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf1", Tag: "signal"}
	}
	ok, err := w.SendSignal(ctx, store.Signal{ExecutionID: "wf1", Name: "approve", Payload: []byte(`"yes"`)}, wake())
	check(t, err)
	if !ok {
		t.Fatal("first signal must be stored")
	}
	ok, err = w.SendSignal(ctx, store.Signal{ExecutionID: "wf1", Name: "approve", Payload: []byte(`"no"`)}, wake())
	check(t, err)
	if ok {
		t.Fatal("the first writer of a signal name wins")
	}
	sig := must(w.GetSignal(ctx, "wf1", "approve"))(t)
	if sig == nil || string(sig.Payload) != `"yes"` || sig.CreatedAt.IsZero() {
		t.Fatalf("signal: %+v", sig)
	}
	if s := must(w.GetSignal(ctx, "wf1", "other"))(t); s != nil {
		t.Fatalf("no such signal: %+v", s)
	}
	msgs := must(d.ListMessages(ctx, store.MessageFilter{EntityType: "workflow/order"}))(t)
	wakes := 0
	for _, m := range msgs {
		if m.Tag == "signal" {
			wakes++
		}
	}
	if wakes != 1 {
		t.Fatalf("one wake for the stored signal, none for the loser: %d", wakes)
	}
	// every signal of the run, in arrival order; none of another run's
	otherWake := func(id string) *store.Message {
		return &store.Message{Shard: "default/1", EntityType: "workflow/other", EntityID: id, Tag: "signal"}
	}
	_, _, _, err = w.StartExecution(ctx, newExec("wf9"), store.StartContext{}, startMsg("wf9"), nil)
	check(t, err)
	_, err = w.SendSignal(ctx, store.Signal{ExecutionID: "wf9", Name: "elsewhere", Payload: []byte(`1`)}, otherWake("wf9"))
	check(t, err)
	_, err = w.SendSignal(ctx, store.Signal{ExecutionID: "wf1", Name: "later", Payload: []byte(`{"n":2}`)}, otherWake("wf1"))
	check(t, err)
	sigs := must(w.ListSignals(ctx, "wf1"))(t)
	if len(sigs) != 2 || sigs[0].Name != "approve" || string(sigs[0].Payload) != `"yes"` || sigs[1].Name != "later" ||
		string(sigs[1].Payload) != `{"n":2}` || sigs[0].ExecutionID != "wf1" || sigs[1].CreatedAt.Before(sigs[0].CreatedAt) {
		t.Fatalf("list signals: %+v", sigs)
	}
	if l := must(w.ListSignals(ctx, "nope"))(t); len(l) != 0 {
		t.Fatalf("signals of an unknown run: %+v", l)
	}
	if _, err := w.SendSignal(ctx, store.Signal{ExecutionID: "nope", Name: "x"}, wake()); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("signal to an unknown run: %v", err)
	}
}

func testCancel(t *testing.T, d store.Driver, w store.Workflows) {
	ctx := ctxT(t)
	_, _, _, err := w.StartExecution(ctx, newExec("wf1"), store.StartContext{}, startMsg("wf1"), nil)
	check(t, err)
	wake := &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf1", Tag: "cancel"}
	ok, err := w.RequestCancel(ctx, "wf1", wake)
	check(t, err)
	if !ok || !must(w.GetExecution(ctx, "wf1"))(t).CancelRequested {
		t.Fatal("cancel must be recorded")
	}
	_, e := own(t, d, "me:1", "default/1")
	check(t, store.UpdateExecution(ctx, w, store.ExecutionUpdate{ID: "wf1", Shard: "default/1", Fence: store.Fence{Owner: "me:1", Epoch: e}, Status: store.ExecCancelled}))
	ok, err = w.RequestCancel(ctx, "wf1", wake)
	check(t, err)
	if ok {
		t.Fatal("cancelling a finished run does nothing")
	}
	if _, err := w.RequestCancel(ctx, "nope", wake); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("cancel of an unknown run: %v", err)
	}
}

func testIntrospection(t *testing.T, d store.Driver) {
	in := store.Introspection(d)
	ctx := ctxT(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	later := now.Add(time.Second)
	check(t, in.Record(ctx, store.IntrospectionBatch{}))
	check(t, in.Record(ctx, store.IntrospectionBatch{
		Runs: []store.RunRecord{{ExecutionID: "wf1", Name: "order", Status: store.ExecRunning, ReplicaID: "pod-a", Runner: "a:1", StartedAt: now, UpdatedAt: now}},
		Steps: []store.StepRecord{
			{ExecutionID: "wf1", Seq: 1, Name: "b", Kind: store.JournalStep, Attempt: 1, Status: "running", Runner: "a:1", ReplicaID: "pod-a", StartedAt: now},
			{ExecutionID: "wf1", Seq: 0, Name: "a", Kind: store.JournalStep, Attempt: 1, Status: "completed", Runner: "a:1", StartedAt: now, FinishedAt: now},
		},
		Events: []store.EventRecord{{ExecutionID: "wf1", At: now, Kind: "started", ReplicaID: "pod-a"}},
	}))
	// a later batch: records without a start keep the stored one
	check(t, in.Record(ctx, store.IntrospectionBatch{
		Runs: []store.RunRecord{{ExecutionID: "wf1", Name: "order", Status: store.ExecCompleted, ReplicaID: "pod-b", Runner: "b:1", UpdatedAt: later, FinishedAt: later}},
		Steps: []store.StepRecord{
			{ExecutionID: "wf1", Seq: 1, Name: "b", Kind: store.JournalStep, Attempt: 1, Status: "failed", Runner: "a:1", ReplicaID: "pod-a", Error: "x", FinishedAt: now},
			{ExecutionID: "wf1", Seq: 1, Name: "b", Kind: store.JournalStep, Attempt: 2, Status: "completed", Runner: "b:1", ReplicaID: "pod-b", StartedAt: now, FinishedAt: now},
		},
		Events: []store.EventRecord{{ExecutionID: "wf1", At: later, Kind: "completed", Detail: "ok", ReplicaID: "pod-b"}},
	}))
	steps := must(in.RunSteps(ctx, "wf1"))(t)
	if len(steps) != 3 || steps[0].Name != "a" || steps[1].Attempt != 1 || steps[1].Status != "failed" || steps[1].StartedAt.IsZero() || steps[2].Runner != "b:1" {
		t.Fatalf("steps: %+v", steps)
	}
	ev := must(in.RunEvents(ctx, "wf1"))(t)
	if len(ev) != 2 || ev[0].Kind != "started" || ev[1].Detail != "ok" {
		t.Fatalf("events: %+v", ev)
	}
	checkRun(t, d, "wf1", store.ExecCompleted, true)

	// One key twice in one batch: the later record wins, and one without a
	// start keeps the earlier record's. Events are all appended, a zero
	// time being now.
	check(t, in.Record(ctx, store.IntrospectionBatch{
		Runs: []store.RunRecord{
			{ExecutionID: "wf2", Name: "order", Status: store.ExecRunning, Runner: "a:1", StartedAt: now, UpdatedAt: now},
			{ExecutionID: "wf3", Name: "order", Status: store.ExecRunning, Runner: "a:1", StartedAt: now, UpdatedAt: now},
			{ExecutionID: "wf2", Name: "order", Status: store.ExecCompleted, Runner: "a:1", UpdatedAt: later, FinishedAt: later},
		},
		Steps: []store.StepRecord{
			{ExecutionID: "wf2", Seq: 0, Name: "s", Kind: store.JournalStep, Attempt: 1, Status: "running", Runner: "a:1", StartedAt: now},
			{ExecutionID: "wf2", Seq: 0, Name: "s", Kind: store.JournalStep, Attempt: 1, Status: "completed", Runner: "a:1", Trace: "t1", FinishedAt: later},
		},
		Events: []store.EventRecord{
			{ExecutionID: "wf2", At: now, Kind: "started"},
			{ExecutionID: "wf2", Kind: "completed"},
		},
	}))
	steps = must(in.RunSteps(ctx, "wf2"))(t)
	if len(steps) != 1 || steps[0].Status != "completed" || steps[0].Trace != "t1" || !steps[0].StartedAt.Equal(now) || !steps[0].FinishedAt.Equal(later) {
		t.Fatalf("a step recorded twice in a batch: %+v", steps)
	}
	ev = must(in.RunEvents(ctx, "wf2"))(t)
	if len(ev) != 2 || ev[0].Kind != "started" || ev[1].Kind != "completed" || ev[1].At.IsZero() {
		t.Fatalf("events of one batch: %+v", ev)
	}
	checkRun(t, d, "wf2", store.ExecCompleted, true)
	checkRun(t, d, "wf3", store.ExecRunning, true)

	// A large batch (drivers cut it into several statements): every
	// record lands.
	var big store.IntrospectionBatch
	detail := strings.Repeat("d", 1000)
	for i := range 1200 {
		big.Steps = append(big.Steps, store.StepRecord{ExecutionID: "wf4", Seq: i, Name: "s", Kind: store.JournalStep, Attempt: 1, Status: "completed", StartedAt: now})
		big.Events = append(big.Events, store.EventRecord{ExecutionID: "wf4", At: now.Add(time.Duration(i) * time.Millisecond), Kind: "step", Detail: detail})
	}
	big.Runs = append(big.Runs, store.RunRecord{ExecutionID: "wf4", Name: "order", Status: store.ExecCompleted, StartedAt: now, UpdatedAt: later, FinishedAt: later})
	check(t, in.Record(ctx, big))
	steps = must(in.RunSteps(ctx, "wf4"))(t)
	ev = must(in.RunEvents(ctx, "wf4"))(t)
	if len(steps) != 1200 || steps[1199].Seq != 1199 || len(ev) != 1200 || ev[1199].Detail != detail {
		t.Fatalf("a large batch: %d steps, %d events", len(steps), len(ev))
	}
	checkRun(t, d, "wf4", store.ExecCompleted, true)
}

// checkRun reads a run's introspection row, where the store has SQL (the
// interface has no reader for runs), and checks its status and whether it
// has a start time.
func checkRun(t *testing.T, d store.Driver, id string, status store.ExecStatus, started bool) {
	t.Helper()
	db := d.Capabilities().SQL
	if db == nil {
		return
	}
	q := `SELECT status, "startedAt" IS NOT NULL AND "startedAt" <> 0 FROM _voltro_workflow_runs WHERE "executionId" = ?`
	switch d.Dialect() {
	case store.Postgres:
		q = `SELECT status, "startedAt" IS NOT NULL FROM _voltro_workflow_runs WHERE "executionId" = $1`
	case store.MariaDB, store.MySQL:
		q = "SELECT `status`, `startedAt` IS NOT NULL FROM `_voltro_workflow_runs` WHERE `executionId` = ?"
	}
	var got string
	var hasStart bool
	if err := db.QueryRowContext(ctxT(t), q, id).Scan(&got, &hasStart); err != nil {
		t.Fatalf("read run %s: %v", id, err)
	}
	if got != string(status) || hasStart != started {
		t.Fatalf("run %s: status %s, has a start %v; want %s, %v", id, got, hasStart, status, started)
	}
}
