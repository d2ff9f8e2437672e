package storetest

// Run writes: many runs' journal entries and state changes in one call, each
// fenced and judged on its own, and a finishing write that also completes the
// message that ran the replay.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func testWriteRuns(t *testing.T, d store.Driver, w store.Workflows) {
	ctx := ctxT(t)
	_, e := own(t, d, "me:1", "default/1")
	f := store.Fence{Owner: "me:1", Epoch: e}
	claim := &store.EnqueueClaim{Owner: "me:1", Epoch: e, ClaimTTL: time.Minute}
	var startID int64
	for _, id := range []string{"a", "b", "c", "d"} {
		_, _, res, err := w.StartExecution(ctx, newExec(id), store.StartContext{}, startMsg(id), claim)
		check(t, err)
		if res.ClaimedEpoch != e {
			t.Fatalf("start of %s not claimed: %+v", id, res)
		}
		if id == "b" {
			startID = res.ID
		}
	}
	step := func(id string, seq int, result string) *store.JournalEntry {
		return &store.JournalEntry{ExecutionID: id, Seq: seq, Kind: store.JournalStep, Name: "s", Result: []byte(result), Attempts: 1, Runner: "me:1", StartedAt: time.Now()}
	}
	check(t, store.AppendJournal(ctx, w, "default/1", f, *step("c", 0, `"first"`)))

	out, err := w.WriteRuns(ctx, []store.RunWrite{
		{Shard: "default/1", Fence: f, Entry: step("a", 0, `1`)},
		// b finishes: its last entry, its final state and its start message
		{Shard: "default/1", Fence: f, Entry: step("b", 0, `2`), Message: startID,
			Update: &store.ExecutionUpdate{ID: "b", Status: store.ExecCompleted, Output: []byte(`2`), Runner: "me:1"}},
		// c's entry exists: its update must not happen
		{Shard: "default/1", Fence: f, Entry: step("c", 0, `"second"`),
			Update: &store.ExecutionUpdate{ID: "c", Status: store.ExecCompleted, Output: []byte(`3`)}},
		{Shard: "default/1", Fence: store.Fence{Owner: "me:1", Epoch: e + 1}, Entry: step("d", 0, `4`)},
		{Shard: "default/1", Fence: f, Entry: step("nope", 0, `5`)},
		{Shard: "default/1", Fence: f, Update: &store.ExecutionUpdate{ID: "d", Status: store.ExecSuspended, WaitingOn: "sleep"}},
	})
	check(t, err)
	want := []error{nil, nil, errs.ErrAlreadyExists, errs.ErrFenced, errs.ErrNotFound, nil}
	if len(out) != len(want) {
		t.Fatalf("%d outcomes for %d writes", len(out), len(want))
	}
	for i, o := range out {
		if (want[i] == nil) != (o == nil) || (want[i] != nil && !errors.Is(o, want[i])) {
			t.Fatalf("write %d: outcome %v, want %v", i, o, want[i])
		}
	}
	checkWrittenRuns(ctx, t, d, w)
	testWriteRunsRefused(ctx, t, w, f, startID)
}

// checkWrittenRuns checks the rows after testWriteRuns's first batch.
func checkWrittenRuns(ctx context.Context, t *testing.T, d store.Driver, w store.Workflows) {
	if j := must(w.Journal(ctx, "a"))(t); len(j) != 1 || string(j[0].Result) != "1" {
		t.Fatalf("a's journal: %+v", j)
	}
	b := must(w.GetExecution(ctx, "b"))(t)
	if b.Status != store.ExecCompleted || string(b.Output) != "2" || b.FinishedAt.IsZero() {
		t.Fatalf("b must be completed: %+v", b)
	}
	if j := must(w.Journal(ctx, "b"))(t); len(j) != 1 || string(j[0].Result) != "2" {
		t.Fatalf("b's journal: %+v", j)
	}
	msgs := must(d.ListMessages(ctx, store.MessageFilter{EntityID: "b"}))(t)
	if len(msgs) != 1 || msgs[0].State != store.StateProcessed {
		t.Fatalf("b's start message must be processed: %+v", msgs)
	}
	if c := must(w.GetExecution(ctx, "c"))(t); c.Status != store.ExecRunning {
		t.Fatalf("c's update must not happen when its entry existed: %+v", c)
	}
	if j := must(w.Journal(ctx, "c"))(t); len(j) != 1 || string(j[0].Result) != `"first"` {
		t.Fatalf("c's journal keeps the first entry: %+v", j)
	}
	if j := must(w.Journal(ctx, "d"))(t); len(j) != 0 {
		t.Fatalf("a fenced entry must not be written: %+v", j)
	}
	if x := must(w.GetExecution(ctx, "d"))(t); x.Status != store.ExecSuspended || x.WaitingOn != "sleep" {
		t.Fatalf("d must be suspended: %+v", x)
	}
}

// testWriteRunsRefused: the writes a store must refuse, or half refuse,
// after testWriteRuns's first batch (startID is b's start message).
func testWriteRunsRefused(ctx context.Context, t *testing.T, w store.Workflows, f store.Fence, startID int64) {
	// A finished run takes no more writes, and completes no message.
	out, err := w.WriteRuns(ctx, []store.RunWrite{{Shard: "default/1", Fence: f, Message: startID,
		Update: &store.ExecutionUpdate{ID: "b", Status: store.ExecFailed}}})
	check(t, err)
	if !errors.Is(out[0], errs.ErrAlreadyExists) {
		t.Fatalf("update of a finished run: %v", out[0])
	}
	// A message that is not claimed at the fence is reported, the run written.
	out, err = w.WriteRuns(ctx, []store.RunWrite{{Shard: "default/1", Fence: f, Message: startID,
		Update: &store.ExecutionUpdate{ID: "a", Status: store.ExecCompleted, Output: []byte(`1`)}}})
	check(t, err)
	if !errors.Is(out[0], errs.ErrFenced) {
		t.Fatalf("completing a processed message: %v", out[0])
	}
	if x := must(w.GetExecution(ctx, "a"))(t); x.Status != store.ExecCompleted {
		t.Fatalf("a must be completed: %+v", x)
	}
	// Nothing to write is a caller's mistake.
	if _, err := w.WriteRuns(ctx, []store.RunWrite{{Shard: "default/1", Fence: f}}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("an empty write: %v", err)
	}
}
