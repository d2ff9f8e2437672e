// A fenced write held up inside its statement while a takeover commits: the
// write must not land after the takeover.
package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// lockWaiters counts the sessions of s's database that wait for a lock in a
// statement containing what.
func lockWaiters(t *testing.T, s *postgres.Store, what string) int {
	t.Helper()
	var n int
	err := s.Pool().QueryRow(ctxT(t), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`, what).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The old owner's write (an entry and the run's final state, one batch)
// reads its fence, then waits inside its UPDATE for a row lock the test
// holds on the run. Meanwhile the new owner ends the old owner's lock
// session, as a runner fences a frozen one, and takes the shard. The fence
// read locks the ledger row (FOR SHARE), so the takeover waits for the
// write; without that lock the takeover commits at once and the write,
// let go, lands after it.
func TestStaleWriteAdvisory(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgstale")
	s := open(t, url)
	const shard = "default/1"
	if _, _, _, err := s.StartExecution(ctx, store.Execution{ID: "r", Name: "order", Shard: shard, Input: []byte(`{}`)}, store.StartContext{},
		&store.Message{Shard: shard, EntityType: "workflow/order", EntityID: "r", Tag: "start"}, nil); err != nil {
		t.Fatal(err)
	}
	old, err := s.NewLocker(ctx, store.LockAdvisory, "old:1")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	epoch, ok, err := old.Acquire(ctx, shard, time.Minute)
	if err != nil || !ok {
		t.Fatalf("old acquires: %v %v", ok, err)
	}

	// the test's own transaction holds the run's row
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT 1 FROM voltro_workflow_executions WHERE id = 'r' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}

	type result struct {
		out []error
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := s.WriteRuns(ctx, []store.RunWrite{{Shard: shard, Fence: store.Fence{Owner: "old:1", Epoch: epoch},
			Entry:  &store.JournalEntry{ExecutionID: "r", Seq: 0, Kind: store.JournalStep, Name: "s", Result: []byte(`1`), Attempts: 1, Runner: "old:1", StartedAt: time.Now()},
			Update: &store.ExecutionUpdate{ID: "r", Status: store.ExecCompleted, Output: []byte(`"stale"`), Runner: "old:1"}}})
		done <- result{out, err}
	}()
	testwait.For(t, 30*time.Second, "the write to wait for the run's row", func() bool {
		return lockWaiters(t, s, "voltro_workflow_journal") > 0
	})

	nl, err := s.NewLocker(ctx, store.LockAdvisory, "new:1")
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	if n, err := nl.(store.Fencer).Fence(ctx, "old:1", []string{shard}); err != nil || n != 1 {
		t.Fatalf("fence the old owner: %d sessions ended, %v", n, err)
	}
	// tries fail until the ended session's lock is gone with its backend
	tk := storetest.NewTakeover(ctx, nl, shard, time.Minute)
	var newEpoch int64
	takeoverFirst := false
	testwait.For(t, 30*time.Second, "the takeover to commit or wait for a lock", func() bool {
		newEpoch, takeoverFirst = tk.Poll(t)
		return takeoverFirst || lockWaiters(t, s, "INSERT INTO voltro_shard_locks") > 0
	})
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("the old owner's write: %v", r.err)
	}
	if !takeoverFirst {
		testwait.For(t, 30*time.Second, "the takeover after the write", func() bool {
			var ok bool
			newEpoch, ok = tk.Poll(t)
			return ok
		})
	}
	x, err := s.GetExecution(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("takeover first: %v (epoch %d -> %d); the write: %v; the run: %s %s", takeoverFirst, epoch, newEpoch, r.out[0], x.Status, x.Output)
	switch {
	case newEpoch <= epoch:
		t.Errorf("new epoch %d after %d", newEpoch, epoch)
	case takeoverFirst && (!errors.Is(r.out[0], errs.ErrFenced) || x.Status.Terminal()):
		t.Errorf("the stale write landed after the takeover: outcome %v, run %s %s", r.out[0], x.Status, x.Output)
	case !takeoverFirst && (r.out[0] != nil || x.Status != store.ExecCompleted):
		t.Errorf("the takeover waited for the write, which did not land: %v, run %s", r.out[0], x.Status)
	}
}
