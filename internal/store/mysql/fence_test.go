// Forced interleavings of a fenced write with a takeover: the writer is
// paused inside its transaction, after its fence and its writes and before
// its COMMIT, while another owner takes the shard (on another Galera node,
// or on the same single server in advisory mode); the stale write must not
// land.
package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// pausedWrite is one fenced write held before its COMMIT: paused is closed
// when the writer reached the pause, resume lets it go on.
type pausedWrite struct {
	paused, resume chan struct{}
	once           sync.Once
}

// pauseOnce makes the first fenced transaction of s wait at its pause; the
// ones after it (a re-run after a conflict) go through.
func pauseOnce(s *mysql.Store) *pausedWrite {
	p := &pausedWrite{paused: make(chan struct{}), resume: make(chan struct{})}
	mysql.PauseBeforeCommit(s, func(ctx context.Context) {
		p.once.Do(func() {
			close(p.paused)
			select {
			case <-p.resume:
			case <-ctx.Done():
			}
		})
	})
	return p
}

// race is what staleWriteRace saw.
type race struct {
	out           error  // the old owner's write's outcome
	landed        bool   // what the write writes is there afterwards
	state         string // what the write's target looks like afterwards
	takeoverFirst bool   // the takeover committed while the write was paused
	oldEpoch      int64
	newEpoch      int64
}

// fencedOp is a fenced write made in a transaction: prepare sets up what
// it writes (under fence f, on s), write makes it, landed reports whether
// it is there (and what the target looks like), read on reader.
type fencedOp struct {
	name    string
	prepare func(t *testing.T, s *mysql.Store, f store.Fence) any
	write   func(ctx context.Context, s *mysql.Store, f store.Fence, target any) error
	landed  func(t *testing.T, reader *mysql.Store, target any) (bool, string)
}

const raceShard = "default/1"

// fencedOps are the fenced writes that run in a transaction: a run's final
// write (its last entry and its final state) and a message's completion.
var fencedOps = []fencedOp{{
	name: "run write",
	prepare: func(t *testing.T, s *mysql.Store, _ store.Fence) any {
		if _, _, _, err := s.StartExecution(ctxT(t), execOf("r"), store.StartContext{}, nil, nil); err != nil {
			t.Fatal(err)
		}
		return "r"
	},
	write: func(ctx context.Context, s *mysql.Store, f store.Fence, _ any) error {
		out, err := s.WriteRuns(ctx, []store.RunWrite{{Shard: raceShard, Fence: f,
			Entry:  &store.JournalEntry{ExecutionID: "r", Seq: 0, Kind: store.JournalStep, Name: "s", Result: []byte(`1`), Attempts: 1, Runner: f.Owner, StartedAt: time.Now()},
			Update: &store.ExecutionUpdate{ID: "r", Status: store.ExecCompleted, Output: []byte(`"stale"`), Runner: f.Owner}}})
		if err != nil {
			return err
		}
		return out[0]
	},
	landed: func(t *testing.T, reader *mysql.Store, _ any) (bool, string) {
		x, err := reader.GetExecution(ctxT(t), "r")
		if err != nil {
			t.Fatal(err)
		}
		return x.Status == store.ExecCompleted, fmt.Sprintf("run %s %s", x.Status, x.Output)
	},
}, {
	name: "complete",
	prepare: func(t *testing.T, s *mysql.Store, f store.Fence) any {
		m := &store.Message{Shard: raceShard, EntityType: "order", EntityID: "o1", Payload: []byte(`{}`)}
		res, err := s.Enqueue(ctxT(t), m, &store.EnqueueClaim{Owner: f.Owner, Epoch: f.Epoch, ClaimTTL: time.Minute})
		if err != nil || res.ClaimedEpoch != f.Epoch {
			t.Fatalf("enqueue claimed: %+v %v", res, err)
		}
		return res.ID
	},
	write: func(ctx context.Context, s *mysql.Store, f store.Fence, id any) error {
		return s.Complete(ctx, store.Completion{MessageID: id.(int64), Shard: raceShard, Fence: f, Payload: []byte(`"stale"`)})
	},
	landed: func(t *testing.T, reader *mysql.Store, id any) (bool, string) {
		m, err := reader.GetMessage(ctxT(t), id.(int64))
		if err != nil {
			t.Fatal(err)
		}
		return m.State == store.StateProcessed, fmt.Sprintf("message %s", m.State)
	},
}}

// staleWriteRace takes the shard as "old" in mode through oldStore,
// prepares op, pauses op's write by "old" through writer and starts a
// takeover as "new" through taker. Once the takeover has either committed
// or is seen waiting for a lock (waiting, given the new locker's session),
// the write goes on; then the takeover is waited for.
func staleWriteRace(t *testing.T, op fencedOp, mode store.LockMode, oldStore, writer, taker, reader *mysql.Store, waiting func(store.Locker) bool) race {
	ctx := ctxT(t)
	const shard, ttl = raceShard, 300 * time.Millisecond
	old, err := oldStore.NewLocker(ctx, mode, "old:1")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	epoch, ok, err := old.Acquire(ctx, shard, ttl)
	if err != nil || !ok {
		t.Fatalf("old acquires: %v %v", ok, err)
	}
	f := store.Fence{Owner: "old:1", Epoch: epoch}
	target := op.prepare(t, writer, f)
	p := pauseOnce(writer)
	done := make(chan error, 1)
	go func() { done <- op.write(ctx, writer, f, target) }()
	select {
	case <-p.paused:
	case err := <-done:
		t.Fatalf("the write returned before its pause: %v", err)
	}

	// The takeover: in row mode the old lease runs out (the old owner is
	// frozen, it does not refresh); in advisory mode the new owner first
	// ends the old owner's lock session, as a runner fences a frozen one.
	nl, err := taker.NewLocker(ctx, mode, "new:1")
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	if mode == store.LockAdvisory {
		if n, err := nl.(store.Fencer).Fence(ctx, "old:1", []string{shard}); err != nil || n != 1 {
			t.Fatalf("fence the old owner: %d sessions ended, %v", n, err)
		}
	}
	// in row mode, tries fail until the old lease has run out
	tk := storetest.NewTakeover(ctx, nl, shard, time.Minute)
	rc := race{oldEpoch: epoch}
	testwait.For(t, 30*time.Second, "the takeover to commit or wait for a lock", func() bool {
		rc.newEpoch, rc.takeoverFirst = tk.Poll(t)
		return rc.takeoverFirst || waiting(nl)
	})
	close(p.resume)
	rc.out = <-done
	if rc.out != nil && !errors.Is(rc.out, errs.ErrFenced) {
		t.Fatalf("the old owner's write: %v", rc.out)
	}
	if !rc.takeoverFirst {
		testwait.For(t, 30*time.Second, "the takeover after the write", func() bool {
			var ok bool
			rc.newEpoch, ok = tk.Poll(t)
			return ok
		})
	}
	if rc.newEpoch <= epoch {
		t.Fatalf("new epoch %d after %d", rc.newEpoch, epoch)
	}
	// both are decided: read the target (causal on Galera)
	rc.landed, rc.state = op.landed(t, reader, target)
	return rc
}

// checkRace fails unless the write and the takeover are serialised: a
// takeover that committed while the write was paused fences the write (it
// is rolled back: its target is as it was); one that waited for the write
// comes after it (the write landed, under the epoch it held).
func checkRace(t *testing.T, rc race) {
	t.Helper()
	t.Logf("takeover first: %v (epoch %d -> %d); the write: %v; afterwards: %s",
		rc.takeoverFirst, rc.oldEpoch, rc.newEpoch, rc.out, rc.state)
	switch {
	case rc.takeoverFirst && !errors.Is(rc.out, errs.ErrFenced):
		t.Errorf("the takeover committed first, and the stale write's outcome is %v, not fenced", rc.out)
	case rc.takeoverFirst && rc.landed:
		t.Errorf("the stale write landed after the takeover: %s", rc.state)
	case !rc.takeoverFirst && (rc.out != nil || !rc.landed):
		t.Errorf("the takeover waited for the write, which did not land: %v, %s", rc.out, rc.state)
	}
}

// isolations are the session defaults the fenced writes must not depend on:
// under READ COMMITTED a fence check inside a statement is a plain read.
var isolations = []string{"REPEATABLE-READ", "READ-COMMITTED"}

func withIsolation(url, iso string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "tx_isolation=%27" + iso + "%27"
}

// lockWait reports whether locker l's session waits for a row lock, as db
// (on the same server) sees it. InnoDB refreshes what INNODB_TRX shows only
// when nobody read it in the last 0.1 s, so a probe polled more often would
// see the same old rows forever: it looks at most every 0.2 s, and answers
// "not yet" in between.
func lockWait(t *testing.T, db *sql.DB) func(store.Locker) bool {
	var last time.Time
	return func(l store.Locker) bool {
		if time.Since(last) < 200*time.Millisecond {
			return false
		}
		var n int
		err := db.QueryRowContext(ctxT(t), `SELECT COUNT(*) FROM information_schema.INNODB_TRX
			WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id = ?`, mysql.LockerConnID(l)).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		last = time.Now()
		return n > 0
	}
}

// The stale write of a frozen owner on Galera node 0, paused between its
// fence and its commit while a new owner takes the shard on node 1 (which
// does not wait for node 0's locks), is rolled back: its fence write puts
// the lease row in its write-set, so certification (or the applier of the
// takeover on node 0) aborts it, and its re-run finds the shard gone.
func TestStaleWriteGalera(t *testing.T) {
	for _, op := range fencedOps {
		for _, iso := range isolations {
			t.Run(op.name+"/"+iso, func(t *testing.T) {
				urls := testdb.Galera(t)
				a := freshURL(t, withIsolation(urls[0], iso), quiet)
				b := open(t, urls[1], quiet)
				rc := staleWriteRace(t, op, store.LockRow, a, a, b, open(t, urls[2], quiet), lockWait(t, b.DB()))
				checkRace(t, rc)
				if !rc.takeoverFirst {
					t.Errorf("the takeover on node 1 waited for node 0")
				}
			})
		}
	}
}

// Advisory mode on one MariaDB server, statement by statement (no multi
// statements): the old owner's lock session ends while its write is
// paused, the new owner takes the lock; the ledger row, locked by the
// write, makes the takeover wait for the write's commit.
func TestStaleWriteAdvisory(t *testing.T) {
	for _, op := range fencedOps {
		for _, iso := range isolations {
			t.Run(op.name+"/"+iso, func(t *testing.T) {
				url := testdb.MariaDB(t, "my_stale")
				s := freshURL(t, withIsolation(url+"?multiStatements=false", iso), quiet)
				rc := staleWriteRace(t, op, store.LockAdvisory, s, s, s, s, lockWait(t, s.DB()))
				checkRace(t, rc)
			})
		}
	}
}
