package voltro_test

// StartTx and SendTx end to end: with the poll interval at an hour, a run
// or message committed in the application's own transaction must reach its
// owner by the commit's wake-up alone; a rollback leaves nothing to run; a
// sender that dies before the commit leaves the run to the owner's poll.

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// txDB is a database for the transactional tests: the URL the apps use and
// the application's own pool on it.
type txDB struct {
	url  string
	pool func(t testing.TB) *sql.DB
}

func ownPool(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(2)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func txPostgres(t testing.TB, name string) txDB {
	url := testdb.Postgres(t, name)
	return txDB{url, func(t testing.TB) *sql.DB { return ownPool(t, "pgx", url) }}
}

func txMariaDB(t testing.TB, name string) txDB {
	url := testdb.MariaDB(t, name)
	dsn := strings.TrimSuffix(testdb.MariaDBAdminDSN(), "/") + "/" + testdb.DBName(name)
	return txDB{url, func(t testing.TB) *sql.DB { return ownPool(t, "mysql", dsn) }}
}

func txSQLite(t testing.TB) txDB {
	path := filepath.Join(t.TempDir(), "tx.db")
	return txDB{"sqlite:" + path, func(t testing.TB) *sql.DB {
		return ownPool(t, "sqlite", path+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	}}
}

// txApp starts an app on url with the given poll interval, registering
// items (none: a sender that hosts nothing and owns no shards).
func txApp(t testing.TB, url, poll string, items ...voltro.Registrable) *voltro.App {
	t.Helper()
	env := map[string]string{
		"DB_URL": url, "POD_NAME": "tx-" + strconv.Itoa(len(items)), "VOLTRO_CLUSTER_SECRET": "s",
		"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(freePort(t)),
		"VOLTRO_POLL_INTERVAL": poll,
	}
	ctx := context.Background()
	app, err := voltro.New(ctx, voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(items...); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	if len(items) > 0 {
		// Every shard held and its backlog read: from here on, only a
		// wake-up (or the poll) reads again.
		testwait.For(t, 30*time.Second, "the owner to hold every shard", func() bool {
			owned, total := app.Shards()
			return owned == total
		})
	}
	return app
}

type txOrder struct {
	N int `json:"n"`
}

// txFixture is an owner hosting a workflow and an entity that report what
// they run.
type txFixture struct {
	runs  chan int
	notes chan int
	wf    *voltro.Workflow[txOrder, int]
	note  *voltro.Entity[txOrder, int]
}

func newTxFixture() *txFixture {
	f := &txFixture{runs: make(chan int, 16), notes: make(chan int, 16)}
	f.wf = voltro.NewWorkflow("tx.order", func(wc *voltro.WorkflowContext, in txOrder) (int, error) {
		return voltro.Step(wc, "report", func(context.Context) (int, error) { f.runs <- in.N; return in.N, nil })
	})
	f.note = voltro.NewEntity("tx.note", func(_ context.Context, _ string, in txOrder) (int, error) { f.notes <- in.N; return in.N, nil })
	return f
}

func (f *txFixture) items() []voltro.Registrable { return []voltro.Registrable{f.wf, f.note} }

func recv(t testing.TB, ch chan int, what string) int {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: nothing ran (the poll interval is an hour: only the commit's wake-up can run it)", what)
		return 0
	}
}

// txSender starts runs and sends messages: an App, or a Client.
type txSender interface {
	voltro.Runs
	voltro.Sender
}

// startAndSend writes an order row, starts its workflow and sends a note
// in one transaction of the application's own pool.
func startAndSend(t *testing.T, app txSender, f *txFixture, db *sql.DB, n int, commit bool) string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO tx_orders (n) VALUES ("+strconv.Itoa(n)+")"); err != nil {
		t.Fatal(err)
	}
	h, err := f.wf.StartTx(ctx, app, tx, txOrder{N: n})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.note.SendTx(ctx, app, tx, "order-note", txOrder{N: n}); err != nil {
		t.Fatal(err)
	}
	if commit {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	} else if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	return h.ID
}

// The senders of testStartTx.
const (
	byOwner  = "owner"  // the App that hosts the workflow and the entity
	byApp    = "app"    // another App, that hosts nothing
	byClient = "client" // a Client (a web tier)
)

func testStartTx(t *testing.T, db txDB, poll string, by string) {
	ctx := context.Background()
	f := newTxFixture()
	owner := txApp(t, db.url, poll, f.items()...)
	var sender txSender = owner
	switch by {
	case byApp:
		sender = txApp(t, db.url, poll)
	case byClient:
		sender = txClient(t, db.url, poll)
	}
	pool := db.pool(t)
	if _, err := pool.ExecContext(ctx, "CREATE TABLE tx_orders (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	rolled := startAndSend(t, sender, f, pool, 1, false)
	if _, err := owner.WorkflowStatusOf(ctx, rolled); !errors.Is(err, voltro.ErrNotFound) {
		t.Fatalf("a rolled back start must leave no run: %v", err)
	}
	id := startAndSend(t, sender, f, pool, 2, true)
	// Messages to one entity are delivered in order: had the rolled back
	// note been stored, it would come first.
	if got := recv(t, f.notes, "the committed note"); got != 2 {
		t.Fatalf("first note delivered: %d, want the committed one (2)", got)
	}
	if got := recv(t, f.runs, "the committed run"); got != 2 {
		t.Fatalf("run: %d, want 2", got)
	}
	if out, err := voltro.GetHandle[int](sender, id).Result(ctx); err != nil || out != 2 {
		t.Fatalf("result of the committed run: %d, %v", out, err)
	}
	var rows int
	if err := pool.QueryRowContext(ctx, "SELECT COUNT(*) FROM tx_orders").Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("order rows: %d, %v (the rolled back one must be gone)", rows, err)
	}
}

func TestStartTxPostgres(t *testing.T) { testStartTx(t, txPostgres(t, "starttx"), "1h", byApp) }
func TestStartTxMariaDB(t *testing.T)  { testStartTx(t, txMariaDB(t, "starttx"), "1h", byApp) }
func TestStartTxSQLite(t *testing.T)   { testStartTx(t, txSQLite(t), "1h", byOwner) }

// A web tier that hosts nothing starts a run and sends a message in its
// own transaction through a Client, as an App does.
func TestStartTxClientPostgres(t *testing.T) {
	testStartTx(t, txPostgres(t, "starttxc"), "1h", byClient)
}
func TestStartTxClientMariaDB(t *testing.T) { testStartTx(t, txMariaDB(t, "starttxc"), "1h", byClient) }

// On SQLite nothing wakes the instance from another process: it reads its
// backlog at each poll (docs/workflows.md, the client).
func TestStartTxClientSQLite(t *testing.T) { testStartTx(t, txSQLite(t), "200ms", byClient) }

// txClient opens a Client on url with the given poll interval.
func txClient(t testing.TB, url, poll string) *voltro.Client {
	t.Helper()
	env := map[string]string{"DB_URL": url, "VOLTRO_CLUSTER_SECRET": "s", "VOLTRO_POLL_INTERVAL": poll}
	c, err := voltro.NewClient(context.Background(), voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestStartTxSenderDiesMariaDB: the sender's commit waiter dies with it
// before the commit; the owner's poll still runs the committed start.
func TestStartTxSenderDiesMariaDB(t *testing.T) {
	ctx := context.Background()
	db := txMariaDB(t, "starttxdie")
	f := newTxFixture()
	txApp(t, db.url, "200ms", f.items()...)
	sender := txApp(t, db.url, "200ms")
	pool := db.pool(t)
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := f.wf.StartTx(ctx, sender, tx, txOrder{N: 7}); err != nil {
		t.Fatal(err)
	}
	if err := sender.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, f.runs, "the run started before its sender died"); got != 7 {
		t.Fatalf("run: %d, want 7", got)
	}
}

// TestStartTxRefusals: the memory store and a transaction on another
// database are refused with ErrInvalidArgument, and nothing is written.
func TestStartTxRefusals(t *testing.T) {
	ctx := context.Background()
	f := newTxFixture()
	mem := txApp(t, "memory:", "1s", f.items()...)
	other := txSQLite(t).pool(t)
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := f.wf.StartTx(ctx, mem, tx, txOrder{N: 1}); !errors.Is(err, voltro.ErrInvalidArgument) || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("StartTx on the memory store: %v", err)
	}
	if err := f.note.SendTx(ctx, mem, tx, "x", txOrder{N: 1}); !errors.Is(err, voltro.ErrInvalidArgument) {
		t.Fatalf("SendTx on the memory store: %v", err)
	}
	db := txSQLite(t)
	app := txApp(t, db.url, "1s", f.items()...)
	if _, err := f.wf.StartTx(ctx, app, tx, txOrder{N: 1}); !errors.Is(err, voltro.ErrInvalidArgument) || !strings.Contains(err.Error(), "not on this") {
		t.Fatalf("StartTx with a transaction on another database: %v", err)
	}
	if err := f.note.SendTx(ctx, app, nil, "x", txOrder{N: 1}); !errors.Is(err, voltro.ErrInvalidArgument) {
		t.Fatalf("SendTx without a transaction: %v", err)
	}
}

// BenchmarkTxPickup measures how long after the commit of a SendTx the
// owner runs the message (pickup-µs), with the poll interval at an hour.
func BenchmarkTxPickup(b *testing.B) {
	for _, c := range []struct {
		name string
		db   func(t testing.TB) txDB
	}{
		{"postgres", func(t testing.TB) txDB { return txPostgres(t, "txbench") }},
		{"mariadb", func(t testing.TB) txDB { return txMariaDB(t, "txbench") }},
		{"sqlite", txSQLite},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			db := c.db(b)
			f := newTxFixture()
			owner := txApp(b, db.url, "1h", f.items()...)
			sender := owner
			if c.name != "sqlite" {
				sender = txApp(b, db.url, "1h")
			}
			pool := db.pool(b)
			var pickup time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tx, err := pool.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := f.note.SendTx(ctx, sender, tx, "bench", txOrder{N: i}); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				committed := time.Now()
				recv(b, f.notes, "the committed note")
				pickup += time.Since(committed)
			}
			b.ReportMetric(float64(pickup.Microseconds())/float64(b.N), "pickup-µs")
		})
	}
}

// TestStartTxNoOwnerAtCommitPostgres: the only owner leaves while the
// transaction is open, so the commit's NOTIFY reaches nobody; the next
// owner reads the run from the backlog when it takes the shards.
func TestStartTxNoOwnerAtCommitPostgres(t *testing.T) {
	ctx := context.Background()
	db := txPostgres(t, "starttxnoowner")
	f := newTxFixture()
	first := txApp(t, db.url, "1h", f.items()...)
	pool := db.pool(t)
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := f.wf.StartTx(ctx, first, tx, txOrder{N: 9}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	txApp(t, db.url, "1h", f.items()...)
	if got := recv(t, f.runs, "the run committed while no instance owned its shard"); got != 9 {
		t.Fatalf("run: %d, want 9", got)
	}
}
