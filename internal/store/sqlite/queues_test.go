// Queue tests specific to SQLite: the 0800 upgrade of a database with runs,
// the plans of Dequeue's statements, both per-partition and per-holder
// limits at once, dequeues racing through two handles on one file, and an
// idle Dequeue that leaves the write lock alone.

package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/sqlite"
)

func queued(id, q, part, shard string) store.Execution {
	return store.Execution{ID: id, Name: "order", Shard: shard, Input: []byte(`{}`), Queue: q, Partition: part}
}

func start(t *testing.T, s *sqlite.Store, x store.Execution) {
	t.Helper()
	if _, existing, _, err := s.StartExecution(context.Background(), x, store.StartContext{Source: "test"}, nil, nil); err != nil || existing {
		t.Fatalf("start %s: existing=%v err=%v", x.ID, existing, err)
	}
}

func dequeueIDs(t *testing.T, s *sqlite.Store, q string) string {
	t.Helper()
	got, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: q})
	if err != nil {
		t.Fatalf("dequeue %s: %v", q, err)
	}
	ids := make([]string, len(got))
	for i, g := range got {
		ids[i] = g.ExecutionID
	}
	return fmt.Sprint(ids)
}

func putQueue(t *testing.T, s *sqlite.Store, l store.QueueLimits) {
	t.Helper()
	if _, err := s.PutQueue(context.Background(), l); err != nil {
		t.Fatal(err)
	}
}

// hold takes shard for owner on a locker closed at the end of t.
func hold(t *testing.T, s *sqlite.Store, owner, shard string) store.Fence {
	t.Helper()
	ctx := context.Background()
	l, err := s.NewLocker(ctx, store.LockRow, owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	e, ok, err := l.Acquire(ctx, shard, time.Hour)
	if err != nil || !ok {
		t.Fatalf("acquire %s for %s: ok=%v err=%v", shard, owner, ok, err)
	}
	return store.Fence{Owner: owner, Epoch: e}
}

// TestQueueMigrationKeepsRuns upgrades a database made by the migrations
// before 0800, with runs in it: 0800 rebuilds the executions table, and
// every run must come through with its rowid (the tie-break of created_at
// in the newest-first listing) and its status, and the table must then
// take queued runs.
func TestQueueMigrationKeepsRuns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	if _, err := db.ExecContext(ctx, `CREATE TABLE voltro_schema_migrations (version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		v := strings.TrimSuffix(filepath.Base(f), ".sql")
		if v >= "0800" {
			break
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(b)); err != nil {
			t.Fatalf("apply %s: %v", v, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO voltro_schema_migrations VALUES (?, 1)`, v); err != nil {
			t.Fatal(err)
		}
	}
	// three runs created in the same microsecond, inserted c, a, b: the
	// listing orders their tie by rowid, newest first
	at := time.Now().UnixMicro()
	for _, r := range []struct{ id, status string }{{"c", "completed"}, {"a", "suspended"}, {"b", "running"}} {
		if _, err := db.ExecContext(ctx, `INSERT INTO voltro_workflow_executions (id, name, shard, status, input, waiting_on, created_at, updated_at)
			VALUES (?, 'order', 'default/1', ?, x'7b7d', 'sleep 1', ?, ?)`, r.id, r.status, at, at); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO voltro_workflow_executions (id, name, shard, status, created_at, updated_at)
		VALUES ('bad', 'order', 'default/1', 'queued', 1, 1)`); err == nil {
		t.Fatal("before 0800 the status check refuses 'queued'")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openTest(t, path)
	got, err := s.ListExecutions(ctx, store.ExecutionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, x := range got {
		order = append(order, x.ID+":"+string(x.Status))
		if x.Queue != "" || x.Partition != "" || x.Priority != 0 || !x.StartAt.IsZero() || !x.DequeuedAt.IsZero() ||
			x.WaitingOn != "sleep 1" || string(x.Input) != "{}" || x.CreatedAt.UnixMicro() != at {
			t.Fatalf("an upgraded run reads back as it was, on no queue: %+v", x)
		}
	}
	if fmt.Sprint(order) != "[b:running a:suspended c:completed]" {
		t.Fatalf("upgraded runs, newest first (ties by rowid): %v", order)
	}
	start(t, s, queued("q1", "llm", "", "default/1"))
	putQueue(t, s, store.QueueLimits{Name: "llm", Concurrency: 1})
	if got := dequeueIDs(t, s, "llm"); got != "[q1]" {
		t.Fatalf("dequeue after the upgrade: %s", got)
	}
	var left int
	if err := s.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE name LIKE '%0800%'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the rebuild leaves nothing behind: %d %v", left, err)
	}
	var check string
	if err := s.DB().QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %s %v", check, err)
	}
}

// fullScan matches a plan line that reads a whole executions table.
var fullScan = regexp.MustCompile(`^SCAN (e|x|voltro_workflow_executions)\b`)

func explain(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		if fullScan.MatchString(detail) {
			t.Errorf("a full scan of the runs: %s\n%s", detail, query)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestDequeuePlans: on a table of mostly unqueued runs, analyzed, Dequeue's
// statements read the queue's runs through the partial queue indexes (and
// the run they move by its id), never by scanning the runs.
func TestDequeuePlans(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "plan.db"))
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		status := []string{"completed", "running", "suspended", "failed"}[i%4]
		if _, err := tx.ExecContext(ctx, `INSERT INTO voltro_workflow_executions (id, name, shard, status, created_at, updated_at)
			VALUES (?, 'order', 'default/1', ?, ?, ?)`, fmt.Sprint("u", i), status, i, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		start(t, s, queued(fmt.Sprint("q", i), []string{"llm", "mail"}[i%2], fmt.Sprint("t", i%5), "default/1"))
	}
	if _, err := s.DB().ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	args := []any{sql.Named("queue", "llm"), sql.Named("now", time.Now().UnixMicro()), sql.Named("since", 0), sql.Named("rated", true),
		sql.Named("pc", 1), sql.Named("wc", 1), sql.Named("limit", 10), sql.Named("ids", `["q0"]`)}
	for _, c := range []struct {
		name, query string
		want        []string
	}{
		{"due", sqlite.DequeueDueSQL, []string{"COVERING INDEX voltro_workflow_executions_queue (queue=? AND status=?)"}},
		{"slots", sqlite.DequeueSlotsSQL, []string{"INDEX voltro_workflow_executions_queue (queue=? AND status=?)",
			"COVERING INDEX voltro_workflow_executions_dequeued (queue=? AND dequeued_at>?)"}},
		{"heads", sqlite.DequeueHeadsSQL, []string{"SEARCH e USING INDEX voltro_workflow_executions_queue (queue=? AND status=?)",
			"SEARCH x USING INTEGER PRIMARY KEY (rowid=?)"}},
		{"mark", sqlite.DequeueMarkSQL, []string{"INDEX sqlite_autoindex_voltro_workflow_executions_1 (id=?)"}},
		{"stats", sqlite.QueueStatsSQL, []string{"INDEX voltro_workflow_executions_queue (queue=? AND status=?)",
			"COVERING INDEX voltro_workflow_executions_dequeued (queue=? AND dequeued_at>?)"}},
	} {
		plan := explain(t, s.DB(), c.query, args...)
		for _, w := range c.want {
			if !strings.Contains(plan, w) {
				t.Errorf("%s: plan without %q:\n%s", c.name, w, plan)
			}
		}
	}
}

// TestDequeueBothLimits: with a partition limit and a holder limit, a run
// passed over for its holder does not count against its partition, and a
// holder's slots held before the dequeue count against it.
func TestDequeueBothLimits(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "both.db"))
	hold(t, s, "x:1", "s/x")
	hold(t, s, "y:1", "s/y")
	putQueue(t, s, store.QueueLimits{Name: "both"})
	start(t, s, queued("held", "both", "other", "s/x"))
	if got := dequeueIDs(t, s, "both"); got != "[held]" {
		t.Fatalf("no limits: %s", got)
	}
	putQueue(t, s, store.QueueLimits{Name: "both", PartitionConcurrency: 1, WorkerConcurrency: 1})
	start(t, s, queued("r1", "both", "p", "s/x")) // its holder x is at its limit
	start(t, s, queued("r2", "both", "p", "s/y"))
	start(t, s, queued("r3", "both", "p", "s/y"))
	if got := dequeueIDs(t, s, "both"); got != "[r2]" {
		t.Fatalf("r1 passed over for its holder, r2 takes its partition's slot: %s", got)
	}
	if got := dequeueIDs(t, s, "both"); got != "[]" {
		t.Fatalf("every partition or holder is at its limit: %s", got)
	}

	// a holder limit alone, with a slot held already
	putQueue(t, s, store.QueueLimits{Name: "w", WorkerConcurrency: 2})
	start(t, s, queued("w-held", "w", "", "s/x"))
	if got := dequeueIDs(t, s, "w"); got != "[w-held]" {
		t.Fatalf("first: %s", got)
	}
	for _, id := range []string{"a1", "a2", "a3"} {
		start(t, s, queued(id, "w", "", "s/x"))
	}
	start(t, s, queued("b1", "w", "", "s/y"))
	if got := dequeueIDs(t, s, "w"); got != "[a1 b1]" {
		t.Fatalf("x holds one of its two slots: %s", got)
	}
}

// TestDequeueAcrossHandles: dequeues racing through two handles on one file
// (two processes, as far as SQLite can tell) never hand out more slots than
// the queue's limit, round after round as slots free up.
func TestDequeueAcrossHandles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "race.db")
	handles := []*sqlite.Store{openTest(t, path), openTest(t, path)}
	s := handles[0]
	f := hold(t, s, "me:1", "default/1")
	putQueue(t, s, store.QueueLimits{Name: "race", Concurrency: 3, PartitionConcurrency: 2})
	for i := range 30 {
		start(t, s, queued(fmt.Sprintf("x%02d", i), "race", fmt.Sprint("t", i%3), "default/1"))
	}
	for round := range 3 {
		var mu sync.Mutex
		var got []store.Dequeued
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				d, err := handles[i%2].Dequeue(ctx, store.DequeueRequest{Queue: "race"})
				if err != nil {
					t.Errorf("dequeue: %v", err)
					return
				}
				mu.Lock()
				got = append(got, d...)
				mu.Unlock()
			}()
		}
		close(gate)
		wg.Wait()
		if len(got) != 3 {
			t.Fatalf("round %d: %d slots handed out, want 3: %+v", round, len(got), got)
		}
		for _, d := range got {
			if err := store.UpdateExecution(ctx, s, store.ExecutionUpdate{ID: d.ExecutionID, Shard: "default/1", Fence: f,
				Status: store.ExecCompleted, Output: []byte(`1`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDequeueIdleSkipsWriteLock: a Dequeue of a queue with nothing due
// answers from the read pool while another connection holds the write lock.
func TestDequeueIdleSkipsWriteLock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "idle.db")
	s := openTest(t, path)
	putQueue(t, s, store.QueueLimits{Name: "idle", Concurrency: 1})
	later := queued("later", "idle", "", "default/1")
	later.StartAt = time.Now().Add(time.Hour)
	start(t, s, later)
	tx, err := userPool(t, path).BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE "_voltro_queues" SET updated_at = updated_at`); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	began := time.Now()
	got, err := s.Dequeue(dctx, store.DequeueRequest{Queue: "idle"})
	if err != nil || len(got) != 0 || time.Since(began) > time.Second {
		t.Fatalf("an idle dequeue waited for the write lock: got=%v err=%v after %v", got, err, time.Since(began))
	}
}
