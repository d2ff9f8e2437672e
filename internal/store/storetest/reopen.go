package storetest

// ReopenExecution: a failed run made running again, its journal cut where
// asked, its spent dedupe keys freed, a wake-up enqueued; any other status
// is left alone.

import (
	"errors"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func testReopen(t *testing.T, d store.Driver, w store.Workflows) {
	ctx := ctxT(t)
	_, epoch := own(t, d, "me:1", "default/1")
	f := store.Fence{Owner: "me:1", Epoch: epoch}
	_, _, _, err := w.StartExecution(ctx, newExec("wf_r"), store.StartContext{}, startMsg("wf_r"), nil)
	check(t, err)
	req := store.ClaimRequest{Owner: "me:1", Types: []string{"workflow/order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}
	got := must(d.Claim(ctx, req))(t)
	if len(got) != 1 {
		t.Fatalf("claim the start: %+v", got)
	}
	for seq, failed := range []bool{false, true, false} {
		e := store.JournalEntry{ExecutionID: "wf_r", Seq: seq, Kind: store.JournalStep, Name: "s", Result: []byte(`1`), Attempts: 1}
		if failed {
			e.Result, e.Error = nil, errs.Encode(errs.New(errs.CodeHandler, "boom"))
		}
		check(t, store.AppendJournal(ctx, w, "default/1", f, e))
	}
	check(t, store.UpdateExecution(ctx, w, store.ExecutionUpdate{ID: "wf_r", Shard: "default/1", Fence: f, Status: store.ExecFailed, Error: errs.Encode(errs.New(errs.CodeHandler, "boom"))}))
	check(t, d.Complete(ctx, store.Completion{MessageID: got[0].ID, Shard: "default/1", Fence: f}))
	timer := &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf_r", Tag: "timer", DedupeKey: "wf_r:timer:3"}
	must(d.Enqueue(ctx, timer, nil))(t)
	tm := must(d.Claim(ctx, req))(t)
	check(t, d.Complete(ctx, store.Completion{MessageID: tm[0].ID, Shard: "default/1", Fence: f}))

	wake := func() *store.Message {
		return &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf_r", Tag: "resume"}
	}
	found, reopened, err := w.ReopenExecution(ctx, "wf_r", []store.ExecStatus{store.ExecCancelled}, 1, wake())
	check(t, err)
	if found != store.ExecFailed || reopened {
		t.Fatalf("a failed run reopened only from cancelled: found=%s reopened=%v", found, reopened)
	}
	if x := must(w.GetExecution(ctx, "wf_r"))(t); x.Status != store.ExecFailed || len(must(w.Journal(ctx, "wf_r"))(t)) != 3 {
		t.Fatalf("a refused reopen must change nothing: %+v", x)
	}
	found, reopened, err = w.ReopenExecution(ctx, "wf_r", []store.ExecStatus{store.ExecFailed, store.ExecCancelled}, 1, wake())
	check(t, err)
	if found != store.ExecFailed || !reopened {
		t.Fatalf("reopen: found=%s reopened=%v", found, reopened)
	}
	x := must(w.GetExecution(ctx, "wf_r"))(t)
	if x.Status != store.ExecRunning || len(x.Error) != 0 || !x.FinishedAt.IsZero() || x.CancelRequested {
		t.Fatalf("a reopened run is running again: %+v", x)
	}
	if j := must(w.Journal(ctx, "wf_r"))(t); len(j) != 1 || j[0].Seq != 0 {
		t.Fatalf("the journal is cut at seq 1: %+v", j)
	}
	if ms := must(d.Claim(ctx, req))(t); len(ms) != 1 || ms[0].Tag != "resume" {
		t.Fatalf("the wake-up is pending for the owner: %+v", ms)
	}
	again := &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf_r", Tag: "timer", DedupeKey: "wf_r:timer:3"}
	if res := must(d.Enqueue(ctx, again, nil))(t); res.Duplicate {
		t.Fatal("the spent timer's dedupe key must be free after a reopen")
	}
	if _, _, err := w.ReopenExecution(ctx, "wf_none", []store.ExecStatus{store.ExecFailed}, -1, wake()); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("reopen of an unknown run: %v", err)
	}
}
