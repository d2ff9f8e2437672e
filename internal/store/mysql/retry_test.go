// A real InnoDB deadlock against a store write: the store's side is chosen
// as the victim (1213), and the retry helper re-runs the transaction.
package mysql_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/store"
)

func TestCompleteRetriesDeadlock(t *testing.T) {
	ctx := ctxT(t)
	s, url := fresh(t, "mydeadlock", quiet)
	res, err := dburl.Resolve(url, "")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("mysql", res.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// a heavy transaction: InnoDB picks the lighter one as the victim
	if _, err := raw.ExecContext(ctx, "CREATE TABLE filler (id INT PRIMARY KEY, v INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, "INSERT INTO filler SELECT seq, 0 FROM seq_1_to_500"); err != nil {
		t.Fatal(err)
	}

	l, err := s.NewLocker(ctx, store.LockAdvisory, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	epoch, ok, err := l.Acquire(ctx, "default/1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire %v %v", ok, err)
	}
	m := &store.Message{Shard: "default/1", EntityType: "order", EntityID: "1", Payload: []byte("{}")}
	r, err := s.Enqueue(ctx, m, &store.EnqueueClaim{Owner: "a:1", Epoch: epoch, ClaimTTL: time.Minute})
	if err != nil || r.ClaimedEpoch != epoch {
		t.Fatalf("enqueue claimed: %+v %v", r, err)
	}

	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE filler SET v = v + 1"); err != nil {
		t.Fatal(err)
	}
	var e int64
	if err := tx.QueryRowContext(ctx, "SELECT epoch FROM voltro_shard_locks WHERE shard = 'default/1' FOR UPDATE").Scan(&e); err != nil {
		t.Fatal(err)
	}
	before := s.RetryCount()
	done := make(chan error, 1)
	go func() {
		// locks the message row, then waits for the ledger row we hold
		done <- s.Complete(ctx, store.Completion{MessageID: r.ID, Shard: "default/1", Fence: store.Fence{Owner: "a:1", Epoch: epoch}, Payload: []byte(`"ok"`)})
	}()
	time.Sleep(300 * time.Millisecond)
	// closes the cycle: we wait for the message row the store holds
	var id int64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM voltro_messages WHERE id = ? FOR UPDATE", r.ID).Scan(&id); err != nil {
		t.Fatalf("the heavy transaction was chosen as the victim: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("complete after a deadlock must succeed on retry: %v", err)
	}
	if got := s.RetryCount() - before; got < 1 {
		t.Fatalf("no retry recorded (%d): the deadlock did not happen", got)
	}
	if m, err := s.GetMessage(ctx, r.ID); err != nil || m.State != store.StateProcessed {
		t.Fatalf("message after complete: %+v %v", m, err)
	}
}
