// Multi-statement queries only where the store batches its own writes: the
// application pool, which SQLDB hands to other packages, refuses stacked
// queries whatever the URL says, while Complete still goes as one round trip
// on the batch pool; multiStatements=false in the URL means no batch pool;
// and the two pools together keep to MaxConns.
package mysql_test

import (
	"errors"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/testdb"
)

// refused checks that the server rejected a query as one statement with
// trailing garbage: a syntax error (1064), not a result or another failure.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1064 {
		t.Fatalf("%s: %v, want the server to refuse it as a syntax error (1064)", what, err)
	}
}

// completeOnce enqueues a message claimed at insert and completes it.
func completeOnce(t *testing.T, s *mysql.Store, epoch int64) {
	t.Helper()
	ctx := ctxT(t)
	m := &store.Message{Shard: "default/1", EntityType: "order", EntityID: "1", Payload: []byte("{}")}
	r, err := s.Enqueue(ctx, m, &store.EnqueueClaim{Owner: "a:1", Epoch: epoch, ClaimTTL: time.Minute})
	if err != nil || r.ClaimedEpoch != epoch {
		t.Fatalf("enqueue claimed: %+v %v", r, err)
	}
	if err := s.Complete(ctx, store.Completion{MessageID: r.ID, Shard: "default/1", Fence: store.Fence{Owner: "a:1", Epoch: epoch}, Payload: []byte(`"ok"`)}); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if got, err := s.GetMessage(ctx, r.ID); err != nil || got.State != store.StateProcessed {
		t.Fatalf("message after complete: %+v %v", got, err)
	}
	if rep, err := s.GetReply(ctx, r.ID); err != nil || rep == nil || string(rep.Payload) != `"ok"` {
		t.Fatalf("reply after complete: %+v %v", rep, err)
	}
}

func TestMultiStatementsOnlyOnTheBatchPool(t *testing.T) {
	for _, c := range []struct {
		name, query string
		batched     bool
	}{
		{"default", "", true},
		{"multiStatements=true", "?multiStatements=true", true},
		{"multiStatements=false", "?multiStatements=false", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxT(t)
			s := freshURL(t, testdb.MariaDB(t, "mymulti")+c.query, mysql.Options{MaxConns: 2, Logger: quiet.Logger})
			db := s.DB()

			// the handed-out pool never runs a second statement
			_, err := db.ExecContext(ctx, "SELECT 1; SELECT 2")
			refused(t, "Exec of SELECT 1; SELECT 2 on SQLDB", err)
			rows, err := db.QueryContext(ctx, "SELECT 1; SELECT 2")
			if err == nil {
				rows.Close()
			}
			refused(t, "Query of SELECT 1; SELECT 2 on SQLDB", err)
			if _, err := db.ExecContext(ctx, "CREATE TABLE victim (id INT PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			// an injected "; DROP TABLE …" after a value does nothing
			_, err = db.ExecContext(ctx, "SELECT * FROM voltro_messages WHERE entity_id = '1'; DROP TABLE victim")
			refused(t, "a stacked DROP TABLE on SQLDB", err)
			var n int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM victim").Scan(&n); err != nil {
				t.Fatalf("the table a stacked query would have dropped: %v", err)
			}

			if got := mysql.Batched(s); got != c.batched {
				t.Fatalf("batched = %v, want %v", got, c.batched)
			}
			if (mysql.BatchDB(s) != nil) != c.batched {
				t.Fatalf("batch pool %v, want one: %v", mysql.BatchDB(s), c.batched)
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
			completeOnce(t, s, epoch) // opens the connections: their session setup is not counted

			general, batch := mysql.CountCommands(s)
			completeOnce(t, s, epoch) // warm up the new pools
			m := &store.Message{Shard: "default/1", EntityType: "order", EntityID: "2", Payload: []byte("{}")}
			r, err := s.Enqueue(ctx, m, &store.EnqueueClaim{Owner: "a:1", Epoch: epoch, ClaimTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			g0, b0 := general.Load(), batch.Load()
			if err := s.Complete(ctx, store.Completion{MessageID: r.ID, Shard: "default/1", Fence: store.Fence{Owner: "a:1", Epoch: epoch}, Payload: []byte("1")}); err != nil {
				t.Fatalf("complete: %v", err)
			}
			dg, dbt := general.Load()-g0, batch.Load()-b0
			if c.batched && (dg != 0 || dbt != 1) {
				t.Fatalf("Complete sent %d commands on the application pool and %d on the batch pool, want 0 and 1 (one round trip)", dg, dbt)
			}
			if !c.batched && (dbt != 0 || dg < 3) {
				t.Fatalf("Complete as a plain transaction sent %d commands on the application pool and %d on the batch pool, want 3 or more and 0", dg, dbt)
			}

			// the replacement pools keep the settings: still one statement per query
			_, err = s.DB().ExecContext(ctx, "SELECT 1; SELECT 2")
			refused(t, "SELECT 1; SELECT 2 on the counted SQLDB", err)
		})
	}
}

// The batch pool takes its share of MaxConns: the two pools together open no
// more connections than the one pool did before there were two. A budget of
// one leaves no room for a batch pool.
func TestPoolsShareMaxConns(t *testing.T) {
	url := testdb.MariaDB(t, "mymulticonns")
	for _, c := range []struct {
		query            string
		max              int
		general, batches int
	}{
		{"", 0, 10, 10}, // the default, 20
		{"", 20, 10, 10},
		{"", 5, 3, 2},
		{"", 2, 1, 1},
		{"", 1, 1, 0},
		{"?multiStatements=false", 20, 20, 0},
	} {
		s := open(t, url+c.query, mysql.Options{MaxConns: c.max, Logger: quiet.Logger})
		g := s.DB().Stats().MaxOpenConnections
		b := 0
		if bd := mysql.BatchDB(s); bd != nil {
			b = bd.Stats().MaxOpenConnections
		}
		if g != c.general || b != c.batches || mysql.Batched(s) != (c.batches > 0) {
			t.Errorf("MaxConns=%d%s: application pool %d, batch pool %d, batched %v; want %d and %d", c.max, c.query, g, b, mysql.Batched(s), c.general, c.batches)
		}
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
}
