package storetest

// The transactional part of the conformance suite: a start or a message
// written in the caller's transaction exists if and only if it commits, a
// transaction on another database is refused and left usable, and
// AwaitCommit answers at the commit.

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// Where remembers what database (a URL, a path, a name) each store a
// factory opened is on, for TxOptions.Pool to open the application's own
// pool there.
type Where[K any] struct {
	mu sync.Mutex
	at map[store.Driver]K
}

// Remember notes that d is on k and returns d.
func (w *Where[K]) Remember(d store.Driver, k K) store.Driver {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at == nil {
		w.at = map[store.Driver]K{}
	}
	w.at[d] = k
	return d
}

// Of is where d is.
func (w *Where[K]) Of(d store.Driver) K {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at[d]
}

var txCluster = store.ClusterConfig{ShardCount: 4, Groups: []string{"default"}}

// runTx runs the transactional cases, for stores with Capabilities.Tx.
func runTx(t *testing.T, factory Factory, opts TxOptions) {
	get := func(t *testing.T) (store.Driver, store.TxWriter, *sql.DB) {
		// The real clock: these writes run on the application's own
		// connections, which no test clock of the store's reaches.
		d := factory(t, nil)
		must(d.EnsureClusterConfig(ctxT(t), txCluster))(t)
		tw := d.Capabilities().Tx
		if tw == nil {
			t.Skipf("the %s store writes nothing in the caller's transaction (no Capabilities.Tx)", d.Dialect())
		}
		if opts.Pool == nil || opts.Bare == nil {
			t.Fatalf("the %s store has Capabilities.Tx: Options.Tx.Pool and Options.Tx.Bare must open the application's pools", d.Dialect())
		}
		return d, tw, opts.Pool(t, d)
	}
	levels := opts.Levels
	if len(levels) == 0 {
		levels = []sql.IsolationLevel{sql.LevelDefault}
	}
	for _, lv := range levels {
		// One database for both: the rollback must leave it empty, and the
		// commit then finds exactly its own rows.
		t.Run("RollbackThenCommit/"+lv.String(), func(t *testing.T) {
			d, tw, db := get(t)
			testTxRollback(t, d, tw, db, lv, opts.AwaitSeesRollback)
			testTxCommit(t, d, tw, db, lv)
		})
	}
	t.Run("StorePool", func(t *testing.T) {
		d, tw, _ := get(t)
		testTxCommit(t, d, tw, d.Capabilities().SQL, sql.LevelDefault)
	})
	t.Run("Existing", func(t *testing.T) { d, tw, db := get(t); testTxExisting(t, d, tw, db) })
	t.Run("Queued", func(t *testing.T) { d, tw, db := get(t); testTxQueued(t, d, tw, db) })
	t.Run("Foreign", func(t *testing.T) {
		_, tw, _ := get(t)
		_, _, otherDB := get(t) // a second voltro database: another cluster
		testTxForeign(t, tw, otherDB, "another voltro database")
		testTxForeign(t, tw, opts.Bare(t), "a database without voltro tables")
		if _, _, err := tw.StartExecutionTx(ctxT(t), nil, txStart("wf_nil")); !errors.Is(err, errs.ErrInvalidArgument) {
			t.Fatalf("a nil transaction: want invalid argument, got %v", err)
		}
	})
}

func txStart(id string) store.StartRequest {
	return store.StartRequest{Exec: newExec(id), Context: store.StartContext{Subject: "user:1", Source: "api"}, Message: startMsg(id)}
}

func begin(t *testing.T, db *sql.DB, lv sql.IsolationLevel) *sql.Tx {
	t.Helper()
	tx, err := db.BeginTx(ctxT(t), &sql.TxOptions{Isolation: lv})
	check(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	return tx
}

// writeBoth starts run id and enqueues a plain and a deduplicated message
// in tx, and returns the ids of the three messages.
func writeBoth(t *testing.T, tw store.TxWriter, tx *sql.Tx, id string) []int64 {
	t.Helper()
	ctx := ctxT(t)
	existing, res, err := tw.StartExecutionTx(ctx, tx, txStart(id))
	check(t, err)
	if existing || res.ID <= 0 || res.Duplicate {
		t.Fatalf("start in tx: existing=%v res=%+v", existing, res)
	}
	plain := must(tw.EnqueueTx(ctx, tx, msg("default/1", "order", "o1", `{"n":1}`)))(t)
	m := msg("default/1", "order", "o2", `{"n":2}`)
	m.DedupeKey = "tx-dedupe"
	keyed := must(tw.EnqueueTx(ctx, tx, m))(t)
	again := must(tw.EnqueueTx(ctx, tx, m))(t)
	if !again.Duplicate || again.ID != keyed.ID || plain.ID <= 0 || keyed.ID <= 0 || plain.Duplicate || keyed.Duplicate {
		t.Fatalf("enqueue in tx: plain=%+v keyed=%+v again=%+v", plain, keyed, again)
	}
	return []int64{res.ID, plain.ID, keyed.ID}
}

func testTxRollback(t *testing.T, d store.Driver, tw store.TxWriter, db *sql.DB, lv sql.IsolationLevel, awaitSeesRollback bool) {
	ctx := ctxT(t)
	ws := store.Workflows(d)
	locksBefore := must(d.ShardLocks(ctx))(t)
	tx := begin(t, db, lv)
	ids := writeBoth(t, tw, tx, "wf_rb")
	var awaited chan bool
	if cw := d.Capabilities().CommitWaits; cw != nil && awaitSeesRollback {
		awaited = make(chan bool, 1)
		go func() { ok, _ := cw.AwaitCommit(ctx, ids[0]); awaited <- ok }()
	}
	check(t, tx.Rollback())
	if awaited != nil && <-awaited {
		t.Fatal("AwaitCommit reported a rolled back message as committed")
	}
	if _, err := ws.GetExecution(ctx, "wf_rb"); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("a rolled back start must leave no run: %v", err)
	}
	if ms := must(d.ListMessages(ctx, store.MessageFilter{}))(t); len(ms) != 0 {
		t.Fatalf("a rolled back transaction must leave no message: %+v", ms)
	}
	if _, err := ws.GetStartContext(ctx, "wf_rb"); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("a rolled back start must leave no start context: %v", err)
	}
	if after := must(d.ShardLocks(ctx))(t); !slices.Equal(locksBefore, after) {
		t.Fatalf("a transactional write must not touch the shard ledger: %+v -> %+v", locksBefore, after)
	}
	if ds := must(d.DrainStats(ctx))(t); totalPending(ds) != 0 || ds.Dead != 0 {
		t.Fatalf("drain stats after a rollback: %+v", ds)
	}
}

func totalPending(ds store.DrainStats) int {
	n := 0
	for _, s := range ds.Shards {
		n += s.Pending
	}
	return n
}

func testTxCommit(t *testing.T, d store.Driver, tw store.TxWriter, db *sql.DB, lv sql.IsolationLevel) {
	ctx := ctxT(t)
	ws := store.Workflows(d)
	_, epoch := own(t, d, "me:1", "default/1")
	tx := begin(t, db, lv)
	ids := writeBoth(t, tw, tx, "wf_ok")
	// Invisible to the store before the commit: nobody can claim it. (A
	// SQLite file has one writer: the open transaction holds it, and a
	// claim would wait for the commit.)
	req := store.ClaimRequest{Owner: "me:1", Types: []string{"workflow/order", "order"}, Shards: []string{"default/1"}, Limit: 10, ClaimTTL: time.Minute}
	if d.Dialect() != store.SQLite {
		if got := must(d.Claim(ctx, req))(t); len(got) != 0 {
			t.Fatalf("claimed before the commit: %+v", got)
		}
	}
	var awaited chan bool
	if cw := d.Capabilities().CommitWaits; cw != nil {
		awaited = make(chan bool, 1)
		go func() { ok, err := cw.AwaitCommit(ctx, ids[1]); awaited <- ok && err == nil }()
	}
	check(t, tx.Commit())
	if awaited != nil && !<-awaited {
		t.Fatal("AwaitCommit did not report the committed message")
	}
	x := must(ws.GetExecution(ctx, "wf_ok"))(t)
	if x.Status != store.ExecRunning || x.Name != "order" || string(x.Input) != `{"n":1}` {
		t.Fatalf("committed run: %+v", x)
	}
	if sc := must(ws.GetStartContext(ctx, "wf_ok"))(t); sc.Subject != "user:1" || sc.Source != "api" {
		t.Fatalf("committed start context: %+v", sc)
	}
	got := must(d.Claim(ctx, req))(t)
	var gotIDs []int64
	for _, m := range got {
		gotIDs = append(gotIDs, m.ID)
		if m.ClaimEpoch != epoch {
			t.Fatalf("claimed at epoch %d, want %d: %+v", m.ClaimEpoch, epoch, m)
		}
	}
	if !slices.Equal(gotIDs, ids) || got[0].Tag != "start" || got[1].Headers["h"] != "v" {
		t.Fatalf("after the commit the owner claims the three messages %v, got %+v", ids, got)
	}
}

func testTxExisting(t *testing.T, d store.Driver, tw store.TxWriter, db *sql.DB) {
	ctx := ctxT(t)
	ws := store.Workflows(d)
	_, _, first, err := ws.StartExecution(ctx, newExec("wf_x"), store.StartContext{}, startMsg("wf_x"), nil)
	check(t, err)
	tx := begin(t, db, sql.LevelDefault)
	q := txStart("wf_x")
	q.Exec.Input = []byte(`{"n":2}`)
	existing, res, err := tw.StartExecutionTx(ctx, tx, q)
	check(t, err)
	if !existing || res.ID != 0 {
		t.Fatalf("a start of an existing id: existing=%v res=%+v", existing, res)
	}
	check(t, tx.Commit())
	if x := must(ws.GetExecution(ctx, "wf_x"))(t); string(x.Input) != `{"n":1}` {
		t.Fatalf("the existing run must be kept: %+v", x)
	}
	if ms := must(d.ListMessages(ctx, store.MessageFilter{}))(t); len(ms) != 1 || ms[0].ID != first.ID {
		t.Fatalf("only the first start message: %+v", ms)
	}
}

// testTxForeign: a transaction on another database is refused before any
// write, with an invalid-argument error, and stays usable.
func testTxForeign(t *testing.T, tw store.TxWriter, db *sql.DB, what string) {
	ctx := ctxT(t)
	tx := begin(t, db, sql.LevelDefault)
	if _, _, err := tw.StartExecutionTx(ctx, tx, txStart("wf_f")); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("a start in a transaction on %s: want invalid argument, got %v", what, err)
	}
	if _, err := tw.EnqueueTx(ctx, tx, msg("default/1", "order", "o1", `{}`)); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("a send in a transaction on %s: want invalid argument, got %v", what, err)
	}
	var one int
	if err := tx.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the transaction on %s must stay usable after the refusal: %v", what, err)
	}
	check(t, tx.Commit())
}

// testTxQueued: a run started on a queue in the caller's transaction is
// stored queued, without a start message, once the transaction commits.
func testTxQueued(t *testing.T, d store.Driver, tw store.TxWriter, db *sql.DB) {
	ctx := ctxT(t)
	tx := begin(t, db, sql.LevelDefault)
	existing, _, err := tw.StartExecutionTx(ctx, tx, store.StartRequest{Exec: queuedExec("wf_q", "llm", "t1", 1), Context: store.StartContext{Source: "api"}})
	check(t, err)
	if existing {
		t.Fatal("a new queued run exists already")
	}
	check(t, tx.Commit())
	x := must(d.GetExecution(ctx, "wf_q"))(t)
	if x.Status != store.ExecQueued || x.Queue != "llm" || x.Partition != "t1" || x.Priority != 1 {
		t.Fatalf("committed queued run: %+v", x)
	}
	if msgs := must(d.ListMessages(ctx, store.MessageFilter{EntityID: "wf_q"}))(t); len(msgs) != 0 {
		t.Fatalf("a queued run has no start message: %+v", msgs)
	}
	must(d.PutQueue(ctx, store.QueueLimits{Name: "llm", Concurrency: 1}))(t)
	if got := dequeue(t, d, "llm", 0); fmt.Sprint(got) != "[wf_q]" {
		t.Fatalf("dequeue after a transaction's start: %v", got)
	}
}
