// Conformance of the PostgreSQL store against a real server, plus the
// PostgreSQL-specific behaviour: concurrent migrations, killed lock sessions
// and LISTEN/NOTIFY wake-ups.
package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// open opens and migrates a store on url, closed when t ends.
func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	return openClock(t, url, nil)
}

// openClock is open on the clock now (nil: the server's clock).
func openClock(t testing.TB, url string, now func() time.Time) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(ctxT(t), url, postgres.Options{MaxConns: 8, Logger: quiet, Clock: now})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctxT(t)); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	var n atomic.Int32
	var urls storetest.Where[string] // each store's database URL, for Reopen and the application's pools
	factory := func(t *testing.T, now func() time.Time) store.Driver {
		url := testdb.Postgres(t, fmt.Sprintf("pgconf%d", n.Add(1)))
		return urls.Remember(openClock(t, url, now), url)
	}
	storetest.Exercise(t, factory, storetest.Options{
		Reopen: func(t *testing.T, d store.Driver, now func() time.Time) store.Driver {
			return openClock(t, urls.Of(d), now)
		},
		Modes:    []store.LockMode{store.LockRow, store.LockAdvisory},
		Parallel: true,
		Tx: storetest.TxOptions{
			Pool:   func(t *testing.T, d store.Driver) *sql.DB { return userPool(t, urls.Of(d)) },
			Bare:   func(t *testing.T) *sql.DB { return userPool(t, testdb.Postgres(t, "pgtxbare")) },
			Levels: []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable},
		},
	})
}

func TestMigrateConcurrently(t *testing.T) {
	url := testdb.Postgres(t, "pgmigrate")
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(ctxT(t), url, postgres.Options{MaxConns: 2, Logger: quiet})
			if err != nil {
				errc <- err
				return
			}
			defer s.Close()
			errc <- s.Migrate(ctxT(t))
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatalf("concurrent migrate: %v", err)
		}
	}
	s := open(t, url) // a later boot applies nothing new
	rows, err := s.DB().QueryContext(ctxT(t), `SELECT version, count(*) FROM voltro_schema_migrations GROUP BY version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []string
	for rows.Next() {
		var v string
		var n int
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("version %s recorded %d times", v, n)
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 || versions[0] != "0001_core" {
		t.Fatalf("applied versions: %v", versions)
	}
	if err := s.Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}

// hold takes default/1 for a:1 in mode and returns the claim and fence that
// go with it; the locker closes when the test ends.
func hold(t *testing.T, s *postgres.Store, mode store.LockMode) (*store.EnqueueClaim, store.Fence) {
	t.Helper()
	ctx := ctxT(t)
	lk, err := s.NewLocker(ctx, mode, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	epoch, _, err := lk.Acquire(ctx, "default/1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return &store.EnqueueClaim{Owner: "a:1", Epoch: epoch, ClaimTTL: time.Minute}, store.Fence{Owner: "a:1", Epoch: epoch}
}

// adminExec runs one statement on a connection of its own (outside any store).
func adminExec(t *testing.T, url, q string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctxT(t), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestAdvisoryHolderKilled(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgkill")
	a := open(t, url)
	b := open(t, url)
	la, err := a.NewLocker(ctx, store.LockAdvisory, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	lb, err := b.NewLocker(ctx, store.LockAdvisory, "b:1")
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	e1, ok, err := la.Acquire(ctx, "default/7", time.Minute)
	if err != nil || !ok {
		t.Fatalf("a acquire: ok=%v err=%v", ok, err)
	}
	if _, ok, err := lb.Acquire(ctx, "default/7", time.Minute); err != nil || ok {
		t.Fatalf("b must not take a held shard: ok=%v err=%v", ok, err)
	}
	// Kill the backend holding the shard's advisory lock from a third
	// connection (b's backend holds a lock too: its presence).
	adminExec(t, url, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $1`, a.LockKey("default/7"))
	var e2 int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		e2, ok, err = lb.Acquire(ctx, "default/7", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !ok || e2 <= e1 {
		t.Fatalf("b after the holder's session died: ok=%v epoch=%d (was %d)", ok, e2, e1)
	}
	if _, err := la.Refresh(ctx, map[string]int64{"default/7": e1}, time.Minute); err == nil {
		t.Fatal("refresh on a killed session must fail")
	}
	if lost, err := lb.Refresh(ctx, map[string]int64{"default/7": e2}, time.Minute); err != nil || len(lost) != 0 {
		t.Fatalf("b refresh: lost=%v err=%v", lost, err)
	}
	// a writes fenced by its old epoch fail
	id, err := a.Enqueue(ctx, &store.Message{Shard: "default/7", EntityType: "t", EntityID: "1"}, &store.EnqueueClaim{Owner: "a:1", Epoch: e1, ClaimTTL: time.Minute})
	if err != nil || id.ClaimedEpoch != 0 {
		t.Fatalf("a enqueue-claim with a lost epoch: %+v %v", id, err)
	}
	locks, err := b.ShardLocks(ctx)
	if err != nil || len(locks) != 1 || locks[0].Owner != "b:1" || locks[0].Epoch != e2 {
		t.Fatalf("ledger: %+v %v", locks, err)
	}
	// closing b clears its ledger row
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
	if locks, _ = b.ShardLocks(ctx); locks[0].Owner != "" {
		t.Fatalf("ledger after close: %+v", locks)
	}
}

// wakes collects wake-ups from a ListenWakes running until the test ends.
type wakes struct {
	ch   chan store.Wake
	done chan struct{}
}

func listen(t *testing.T, s *postgres.Store) *wakes {
	ctx, cancel := context.WithCancel(context.Background())
	w := &wakes{ch: make(chan store.Wake, 1000), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if err := s.ListenWakes(ctx, func(wk store.Wake) { w.ch <- wk }); err != nil {
			t.Errorf("listen wakes: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// await returns the first wake matching ok within 10 s.
func (w *wakes) await(t *testing.T, what string, ok func(store.Wake) bool) store.Wake {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case wk := <-w.ch:
			if ok(wk) {
				return wk
			}
		case <-timeout:
			t.Fatalf("no wake: %s", what)
		}
	}
}

// listening waits until the listener's backend is in place.
func listening(t *testing.T, db *sql.DB) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pid int
		err := db.QueryRowContext(ctxT(t), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'voltro-listen' AND query LIKE 'LISTEN%'`).Scan(&pid)
		if err == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("listener not connected: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestListenWakes(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgwake")
	a := open(t, url)
	b := open(t, url)
	w := listen(t, a)
	pid := listening(t, a.DB())

	// a request from runner a:1 (a send, with no reply_to, announces no reply)
	res, err := b.Enqueue(ctx, &store.Message{Shard: "default/3", EntityType: "order", EntityID: "o1", Payload: []byte("{}"), ReplyTo: "a:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wk := w.await(t, "message enqueued by another handle", func(wk store.Wake) bool { return wk.Kind == store.WakeMessage })
	if wk.ID != res.ID || wk.Shard != "default/3" {
		t.Fatalf("message wake: %+v, want id %d", wk, res.ID)
	}

	// a completion wakes reply waiters
	lk, err := b.NewLocker(ctx, store.LockAdvisory, "b:1")
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	epoch, _, err := lk.Acquire(ctx, "default/3", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Claim(ctx, store.ClaimRequest{Owner: "b:1", Types: []string{"order"}, Shards: []string{"default/3"}, Limit: 1, ClaimTTL: time.Minute})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
	if err := b.Complete(ctx, store.Completion{MessageID: res.ID, Shard: "default/3", Fence: store.Fence{Owner: "b:1", Epoch: epoch}, Payload: []byte("ok")}); err != nil {
		t.Fatal(err)
	}
	w.await(t, "reply stored", func(wk store.Wake) bool { return wk.Kind == store.WakeReply && wk.ID == res.ID })

	// kill the listener's backend: it reconnects and signals the gap
	adminExec(t, url, `SELECT pg_terminate_backend($1)`, pid)
	w.await(t, "gap signal after a reconnect", func(wk store.Wake) bool { return wk == store.Wake{} })
	if pid2 := listening(t, a.DB()); pid2 == pid {
		t.Fatalf("listener backend unchanged")
	}
	res2, err := b.Enqueue(ctx, &store.Message{Shard: "default/4", EntityType: "order", EntityID: "o2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.await(t, "message after the reconnect", func(wk store.Wake) bool { return wk.Kind == store.WakeMessage && wk.ID == res2.ID })
}

// Two clusters in one database, each in its own schema: the namespace keeps
// their advisory lock keys apart.
func TestNamespaceSeparatesLocks(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgns")
	adminExec(t, url, `CREATE SCHEMA other`)
	a := open(t, url)
	b, err := postgres.Open(ctx, url+"&search_path=other", postgres.Options{MaxConns: 2, Namespace: "other", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*postgres.Store{a, b} {
		l, err := s.NewLocker(ctx, store.LockAdvisory, "x:1")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, ok, err := l.Acquire(ctx, "default/1", time.Minute); err != nil || !ok {
			t.Fatalf("each cluster takes its own default/1: ok=%v err=%v", ok, err)
		}
	}
	var n int
	if err := a.DB().QueryRowContext(ctx, `SELECT count(*) FROM other.voltro_shard_locks`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("second cluster's ledger: %d %v", n, err)
	}
}

// Which writes notify: a pending message and a reply for another runner do;
// a message claimed at insert and a reply for the completing runner itself
// do not (that runner wakes its own waiters).
func TestWakeSelection(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgwakesel")
	a := open(t, url)
	w := listen(t, a)
	listening(t, a.DB())
	claim, fence := hold(t, a, store.LockAdvisory)
	epoch := claim.Epoch
	local, err := a.Enqueue(ctx, &store.Message{Shard: "default/1", EntityType: "t", EntityID: "1", ReplyTo: "a:1"}, claim)
	if err != nil || local.ClaimedEpoch != epoch {
		t.Fatalf("local enqueue: %+v %v", local, err)
	}
	if err := a.Complete(ctx, store.Completion{MessageID: local.ID, Shard: "default/1", Fence: fence}); err != nil {
		t.Fatal(err)
	}
	remote, err := a.Enqueue(ctx, &store.Message{Shard: "default/1", EntityType: "t", EntityID: "2", ReplyTo: "b:1"}, claim)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Complete(ctx, store.Completion{MessageID: remote.ID, Shard: "default/1", Fence: fence}); err != nil {
		t.Fatal(err)
	}
	// Not due yet, sent by the shard's owner: it wakes itself, no NOTIFY.
	// The same from a sender whose claim is stale: the owner is told.
	if _, err := a.Enqueue(ctx, &store.Message{Shard: "default/1", EntityType: "t", EntityID: "4", Delay: time.Hour}, claim); err != nil {
		t.Fatal(err)
	}
	stale, err := a.Enqueue(ctx, &store.Message{Shard: "default/1", EntityType: "t", EntityID: "5", Delay: time.Hour},
		&store.EnqueueClaim{Owner: "a:1", Epoch: epoch + 1, ClaimTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := a.Enqueue(ctx, &store.Message{Shard: "default/2", EntityType: "t", EntityID: "3", DedupeKey: "k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order: everything before the keyed
	// message's wake has been seen by then.
	var got []store.Wake
	w.await(t, "keyed pending message", func(wk store.Wake) bool {
		got = append(got, wk)
		return wk.Kind == store.WakeMessage && wk.ID == keyed.ID
	})
	want := []store.Wake{{Kind: store.WakeReply, ID: remote.ID}, {Kind: store.WakeMessage, Shard: "default/1", ID: stale.ID},
		{Kind: store.WakeMessage, Shard: "default/2", ID: keyed.ID}}
	if !slices.Equal(got, want) {
		t.Fatalf("wakes %+v, want %+v", got, want)
	}
}

func TestCompleteShardArgument(t *testing.T) {
	ctx := ctxT(t)
	a := open(t, testdb.Postgres(t, "pgshardarg"))
	claim, fence := hold(t, a, store.LockRow)
	r, err := a.Enqueue(ctx, &store.Message{Shard: "default/1", EntityType: "t", EntityID: "1"}, claim)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Complete(ctx, store.Completion{MessageID: r.ID, Shard: "default/9", Fence: fence}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("wrong shard: want invalid_argument, got %v", err)
	}
	if err := a.Complete(ctx, store.Completion{MessageID: r.ID, Fence: fence, Payload: []byte("x")}); err != nil {
		t.Fatalf("no shard given: %v", err)
	}
	if err := a.Complete(ctx, store.Completion{MessageID: 1 << 50, Fence: fence}); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("missing message: want not_found, got %v", err)
	}
}

func TestUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Nothing listens on port 1.
	_, err := postgres.Open(ctx, "postgres://postgres@127.0.0.1:1/voltro?sslmode=disable&connect_timeout=2", postgres.Options{Logger: quiet})
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("unreachable server: want unavailable, got %v", err)
	}
	// A store whose locker session was killed reports unavailable too.
	url := testdb.Postgres(t, "pgunavail")
	s := open(t, url)
	lk, err := s.NewLocker(ctx, store.LockAdvisory, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	adminExec(t, url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'voltro-locker'`)
	if err := lk.Heartbeat(ctx, "a:1"); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("heartbeat on a killed session: want unavailable, got %v", err)
	}
}

// ExtendClaims passes over a claim another transaction holds locked (a run
// write batch completing it) instead of waiting on it: waiting, in another
// lock order than the batch's, deadlocked under load.
func TestExtendClaimsSkipsLockedClaims(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.Postgres(t, "pgextend")
	s := open(t, url)
	claim, _ := hold(t, s, store.LockAdvisory)
	var ids []int64
	for i := range 2 {
		r, err := s.Enqueue(ctx, &store.Message{Shard: "default/1", EntityType: "t", EntityID: fmt.Sprint(i)}, claim)
		if err != nil || r.ClaimedEpoch == 0 {
			t.Fatalf("enqueue claimed: %+v %v", r, err)
		}
		ids = append(ids, r.ID)
	}
	tx := beginOwn(t, url)
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `UPDATE voltro_messages SET attempts = attempts WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	before := map[int64]time.Time{}
	for _, id := range ids {
		m, err := s.GetMessage(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		before[id] = m.ClaimExpiresAt
	}
	ectx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := s.ExtendClaims(ectx, "a:1", time.Hour); err != nil {
		t.Fatalf("extend with one claim locked elsewhere: %v", err)
	}
	for i, id := range ids {
		m, err := s.GetMessage(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		extended := m.ClaimExpiresAt.After(before[id].Add(30 * time.Minute))
		if extended != (i == 1) {
			t.Fatalf("message %d (locked elsewhere: %v): claim expires %s, was %s", id, i == 0, m.ClaimExpiresAt, before[id])
		}
	}
}
