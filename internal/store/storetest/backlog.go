package storetest

// The backlog operations (store.Backlog): dead-lettering what waits for
// an entity type nobody hosts, and cancelling a run without a runner.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// runBacklog runs the backlog cases.
func runBacklog(t *testing.T, factory Factory) {
	get := func(t *testing.T) (store.Driver, store.Backlog, store.Workflows, *Clock) {
		d, clock := open(t, factory)
		return d, d, d, clock
	}
	t.Run("DeadLetterBacklog", func(t *testing.T) { d, b, _, c := get(t); testDeadLetterBacklog(t, d, b, c) })
	t.Run("CancelExecution", func(t *testing.T) { d, b, w, _ := get(t); testCancelExecution(t, d, b, w) })
	t.Run("DrainStatsShardTypes", func(t *testing.T) { d, _, _, c := get(t); testDrainShardTypes(t, d, c) })
}

// A shard's deliverable backlog split by entity type: a runner judges its
// own drain only by the types it can deliver.
func testDrainShardTypes(t *testing.T, d store.Driver, clock *Clock) {
	ctx := ctxT(t)
	for _, m := range []*store.Message{
		msg("default/1", "a", "1", "{}"), msg("default/1", "a", "2", "{}"), msg("default/1", "b", "1", "{}"),
		msg("default/2", "a", "3", "{}"),
	} {
		must(d.Enqueue(ctx, m, nil))(t)
	}
	later := msg("default/1", "c", "1", "{}")
	later.Delay = time.Hour
	must(d.Enqueue(ctx, later, nil))(t)
	clock.Advance(time.Second)
	ds := must(d.DrainStats(ctx))(t)
	got := map[string][]store.TypeBacklog{}
	for _, sd := range ds.Shards {
		got[sd.Shard] = sd.Types
		n := 0
		for _, tb := range sd.Types {
			n += tb.Pending
			if tb.OldestDeliverable <= 0 || tb.OldestDeliverable > sd.OldestDeliverable {
				t.Fatalf("shard %s type %s: oldest %s, shard's %s", sd.Shard, tb.EntityType, tb.OldestDeliverable, sd.OldestDeliverable)
			}
		}
		if n != sd.Pending {
			t.Fatalf("shard %s: types add up to %d, pending %d", sd.Shard, n, sd.Pending)
		}
	}
	want := map[string][]string{"default/1": {"a:2", "b:1"}, "default/2": {"a:1"}}
	for shard, w := range want {
		var g []string
		for _, tb := range got[shard] {
			g = append(g, fmt.Sprintf("%s:%d", tb.EntityType, tb.Pending))
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("shard %s by type: %v, want %v", shard, g, w)
		}
	}
}

func testDeadLetterBacklog(t *testing.T, d store.Driver, b store.Backlog, clock *Clock) {
	ctx := ctxT(t)
	enq := func(m *store.Message) int64 { t.Helper(); return must(d.Enqueue(ctx, m, nil))(t).ID }
	claim := func(owner, shard string, ttl time.Duration) []store.Message {
		t.Helper()
		return must(d.Claim(ctx, store.ClaimRequest{Owner: owner, Types: []string{"typo"}, Shards: []string{shard}, Limit: 10, ClaimTTL: ttl}))(t)
	}
	// default/1: one message under a live claim, one processed.
	_, e1 := own(t, d, "a:1", "default/1")
	live := enq(msg("default/1", "typo", "live", "{}"))
	done := enq(msg("default/1", "typo", "done", "{}"))
	if got := claim("a:1", "default/1", time.Minute); len(got) != 2 {
		t.Fatalf("claim on default/1: %+v", got)
	}
	check(t, d.Complete(ctx, store.Completion{MessageID: done, Shard: "default/1", Fence: store.Fence{Owner: "a:1", Epoch: e1}, Payload: []byte(`1`)}))
	// default/2: a claim that expired.
	_, _ = own(t, d, "a:2", "default/2")
	expired := enq(msg("default/2", "typo", "expired", "{}"))
	if got := claim("a:2", "default/2", 10*time.Second); len(got) != 1 {
		t.Fatalf("claim on default/2: %+v", got)
	}
	// default/3: a claim made at an epoch the shard has since moved past.
	l3, e3 := own(t, d, "a:3", "default/3")
	stale := enq(msg("default/3", "typo", "stale", "{}"))
	if got := claim("a:3", "default/3", time.Minute); len(got) != 1 {
		t.Fatalf("claim on default/3: %+v", got)
	}
	check(t, l3.Release(ctx, "default/3", e3))
	_, _ = own(t, d, "b:3", "default/3")
	// pending: due now, and delayed by an hour; another type; another entity.
	due := enq(msg("default/4", "typo", "due", "{}"))
	later := msg("default/4", "typo", "later", "{}")
	later.Delay = time.Hour
	delayed := enq(later)
	other := enq(msg("default/4", "real", "due", "{}"))
	clock.Advance(15 * time.Second) // past the short claim, inside the others

	if _, err := b.DeadLetterBacklog(ctx, store.BacklogSelect{}, "x", nil); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("no entity type: want invalid_argument, got %v", err)
	}
	replyErr := errs.Encode(errs.New(errs.CodeDeadLettered, "nobody hosts typo"))
	n := must(b.DeadLetterBacklog(ctx, store.BacklogSelect{EntityType: "typo", EntityID: "due"}, "cleared", replyErr))(t)
	if n != 1 {
		t.Fatalf("one entity's backlog: %d moved, want 1", n)
	}
	n = must(b.DeadLetterBacklog(ctx, store.BacklogSelect{EntityType: "typo"}, "cleared by an operator", replyErr))(t)
	if n != 3 {
		t.Fatalf("the rest of the backlog: %d moved, want 3 (delayed, expired claim, stale epoch)", n)
	}
	for _, id := range []int64{due, delayed, expired, stale} {
		m := must(d.GetMessage(ctx, id))(t)
		if m.State != store.StateDead || m.LastError == "" {
			t.Fatalf("message %d must be dead with its reason: %+v", id, m)
		}
		r := must(d.GetReply(ctx, id))(t)
		if r == nil || !errors.Is(errs.Decode(r.Error), errs.ErrDeadLettered) {
			t.Fatalf("message %d: the waiter's reply must say dead-lettered: %+v", id, r)
		}
	}
	for id, want := range map[int64]store.MessageState{live: store.StateClaimed, done: store.StateProcessed, other: store.StatePending} {
		if m := must(d.GetMessage(ctx, id))(t); m.State != want {
			t.Fatalf("message %d (%s/%s) must stay %s: %+v", id, m.EntityType, m.EntityID, want, m)
		}
	}
	if r := must(d.GetReply(ctx, done))(t); r == nil || string(r.Payload) != "1" {
		t.Fatalf("a processed message keeps its reply: %+v", r)
	}
	// The live claim is still its owner's to finish.
	check(t, d.Complete(ctx, store.Completion{MessageID: live, Shard: "default/1", Fence: store.Fence{Owner: "a:1", Epoch: e1}}))
	if n := must(b.DeadLetterBacklog(ctx, store.BacklogSelect{EntityType: "typo"}, "again", replyErr))(t); n != 0 {
		t.Fatalf("nothing left to move: %d", n)
	}
	// Replayable as any dead letter.
	check(t, d.ReplayDead(ctx, delayed))
	if m := must(d.GetMessage(ctx, delayed))(t); m.State != store.StatePending {
		t.Fatalf("replayed: %+v", m)
	}
	if r := must(d.GetReply(ctx, delayed))(t); r != nil {
		t.Fatalf("replay drops the dead reply: %+v", r)
	}
	if ds := must(d.DrainStats(ctx))(t); ds.Dead != 3 {
		t.Fatalf("drain stats count the dead letters: %d, want 3", ds.Dead)
	}
}

func testCancelExecution(t *testing.T, d store.Driver, b store.Backlog, w store.Workflows) {
	ctx := ctxT(t)
	for _, id := range []string{"wf1", "wf2", "wf3"} {
		_, _, _, err := w.StartExecution(ctx, newExec(id), store.StartContext{Source: "cli"}, startMsg(id), nil)
		check(t, err)
	}
	stored := must(w.SendSignal(ctx, store.Signal{ExecutionID: "wf1", Name: "go", Payload: []byte(`1`)},
		&store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf1", Tag: "signal", DedupeKey: "wf-signal:wf1:go"}))(t)
	if !stored {
		t.Fatal("signal not stored")
	}
	// wf3 finished: cancelling it changes nothing.
	_, e := own(t, d, "me:1", "default/1")
	check(t, store.UpdateExecution(ctx, w, store.ExecutionUpdate{ID: "wf3", Shard: "default/1", Fence: store.Fence{Owner: "me:1", Epoch: e}, Status: store.ExecCompleted, Output: []byte(`3`)}))

	reason := errs.Encode(errs.New(errs.CodeCancelled, "cancelled while no live runner hosts workflow/order"))
	c := store.ExecutionCancel{EntityType: "workflow/order", Error: reason, LastError: "run cancelled", ReplyErr: reason}
	c.ID = "wf1"
	ok, dead, err := b.CancelExecution(ctx, c)
	check(t, err)
	if !ok || dead != 2 {
		t.Fatalf("cancel wf1: cancelled=%v dead=%d, want true and 2 (start and signal)", ok, dead)
	}
	x := must(w.GetExecution(ctx, "wf1"))(t)
	if x.Status != store.ExecCancelled || x.FinishedAt.IsZero() || !errors.Is(errs.Decode(x.Error), errs.ErrCancelled) {
		t.Fatalf("wf1 must be cancelled with its reason: %+v", x)
	}
	for _, m := range must(d.ListMessages(ctx, store.MessageFilter{EntityType: "workflow/order"}))(t) {
		want := store.StatePending
		if m.EntityID == "wf1" {
			want = store.StateDead
		}
		if m.State != want {
			t.Fatalf("message %d of %s: %s, want %s", m.ID, m.EntityID, m.State, want)
		}
	}
	ok, dead, err = b.CancelExecution(ctx, c)
	check(t, err)
	if ok || dead != 0 {
		t.Fatalf("cancelling a cancelled run again: %v %d", ok, dead)
	}
	c.ID = "wf3"
	ok, dead, err = b.CancelExecution(ctx, c)
	check(t, err)
	if ok || dead != 0 {
		t.Fatalf("cancelling a completed run: %v %d", ok, dead)
	}
	if x := must(w.GetExecution(ctx, "wf3"))(t); x.Status != store.ExecCompleted || string(x.Output) != "3" {
		t.Fatalf("a completed run stays completed: %+v", x)
	}
	if m := must(d.ListMessages(ctx, store.MessageFilter{EntityType: "workflow/order", EntityID: "wf3"}))(t); len(m) != 1 || m[0].State != store.StatePending {
		t.Fatalf("a completed run's messages are untouched: %+v", m)
	}
	c.ID = "nope"
	if _, _, err := b.CancelExecution(ctx, c); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("cancel of an unknown run: %v", err)
	}
	if x := must(w.GetExecution(ctx, "wf2"))(t); x.Status.Terminal() {
		t.Fatalf("wf2 untouched: %+v", x)
	}
}
