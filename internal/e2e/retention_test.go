package e2e

// Retention across real processes: three runners with VOLTRO_RETENTION=5s
// on PostgreSQL and on MariaDB, quick runs, sleepers of a minute, runs
// waiting for a signal (one kind with a timer that fires after the run is
// gone), and parents waiting with a finished child. Every finished run
// older than the retention goes with all its rows; every unfinished one
// (and every finished child of an unfinished parent) stays intact, and
// completes, and then goes too.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testwait"
)

var (
	retQuick = voltro.NewWorkflow("e2e.ret.quick", func(wc *voltro.WorkflowContext, in int) (int, error) {
		for _, s := range []string{"a", "b", "c"} {
			var err error
			if in, err = voltro.Step(wc, s, func(context.Context) (int, error) { return in + 1, nil }); err != nil {
				return 0, err
			}
		}
		return in, nil
	})
	retSleeper = voltro.NewWorkflow("e2e.ret.sleeper", func(wc *voltro.WorkflowContext, in int) (int, error) {
		in, err := voltro.Step(wc, "before", func(context.Context) (int, error) { return in + 1, nil })
		if err != nil {
			return 0, err
		}
		wc.Sleep(time.Minute)
		return voltro.Step(wc, "after", func(context.Context) (int, error) { return in + 1, nil })
	})
	// retWaiter waits for "go"; with in < 0 it gives up after -in seconds
	// (a timer that is still pending when the signal finishes the run).
	retWaiter = voltro.NewWorkflow("e2e.ret.waiter", func(wc *voltro.WorkflowContext, in int) (int, error) {
		timeout := time.Duration(0)
		if in < 0 {
			timeout = time.Duration(-in) * time.Second
		}
		v, err := voltro.AwaitSignal[int](wc, "go", timeout)
		return in + v, err
	})
	retParent = voltro.NewWorkflow("e2e.ret.parent", func(wc *voltro.WorkflowContext, in int) (int, error) {
		c, err := voltro.ExecuteChild(wc, retQuick, in)
		if err != nil {
			return 0, err
		}
		v, err := voltro.AwaitSignal[int](wc, "go", 0)
		return c + v, err
	})
)

// registerRetention is the runner role's part (E2E_RETENTION).
func registerRetention(app *voltro.App) error {
	return app.Register(retQuick, retSleeper, retWaiter, retParent)
}

func TestRetentionAcrossInstances(t *testing.T) {
	for _, db := range sqlDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel() // each waits for its sleepers' minute
			retentionAcrossInstances(t, db.name, db.url(t, "retention"))
		})
	}
}

// retDB reads the database directly, per dialect.
type retDB struct {
	db      *sql.DB
	d       store.Driver
	dialect string
}

// q turns ? placeholders into PostgreSQL's and backquotes identifiers
// written "x" for MariaDB.
func (r retDB) q(query string) string {
	if r.dialect == "postgres" {
		var b strings.Builder
		n := 0
		for _, c := range query {
			if c == '?' {
				n++
				b.WriteString("$" + strconv.Itoa(n))
				continue
			}
			b.WriteRune(c)
		}
		return b.String()
	}
	return strings.ReplaceAll(query, `"`, "`")
}

func (r retDB) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := r.db.QueryRowContext(context.Background(), r.q(query), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// rowsOf counts run id's rows in every table that holds them.
func (r retDB) rowsOf(t *testing.T, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for table, col := range map[string]string{
		store.TableExecutions: "id", store.TableJournal: "execution_id", store.TableSignals: "execution_id",
		store.TableStartContexts: `"executionId"`, store.TableRuns: `"executionId"`, store.TableRunSteps: `"executionId"`,
		store.TableRunEvents: `"executionId"`,
	} {
		if n := r.count(t, `SELECT count(*) FROM "`+table+`" WHERE `+col+` = ?`, id); n > 0 {
			out[table] = n
		}
	}
	if n := r.count(t, `SELECT count(*) FROM voltro_messages WHERE dedupe_key = ?`, store.RunStartKey(id)); n > 0 {
		out["start message"] = n
	}
	return out
}

// now is the database's clock.
func (r retDB) now(t *testing.T) time.Time {
	t.Helper()
	now, err := r.d.Now(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// inspectRetention is the retention part of an instance's inspect answer.
func inspectRetention(t *testing.T, p *proc) struct {
	Runs     string           `json:"runs"`
	Sweeping bool             `json:"sweeping"`
	Deleted  map[string]int64 `json:"deleted"`
} {
	t.Helper()
	code, body := get(t, "http://"+p.inspect+"/_voltro/inspect/cluster")
	var doc struct {
		Retention struct {
			Runs     string           `json:"runs"`
			Sweeping bool             `json:"sweeping"`
			Deleted  map[string]int64 `json:"deleted"`
		} `json:"retention"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &doc) != nil {
		t.Fatalf("inspect of %s: %d %s", p.name, code, body)
	}
	return doc.Retention
}

func retentionAcrossInstances(t *testing.T, dialect, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const keep = 5 * time.Second
	// A finished run goes within a sweep interval (1 s) and a pass after
	// it is 5 s old; slack covers a pass that runs long under load.
	const slack = 5 * time.Second
	var ps []*proc
	for i := range 3 {
		ps = append(ps, startProc(t, fmt.Sprintf("ret-%s-%d", dialect, i), map[string]string{
			"DB_URL": url, "E2E_RETENTION": "1", "VOLTRO_RETENTION": "5s", "VOLTRO_DEAD_LETTER_RETENTION": "5s",
			"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s",
		}))
	}
	d := look(t, url)
	r := retDB{db: d.Capabilities().SQL, d: d, dialect: dialect}
	testwait.For(t, 60*time.Second, "shards spread over the three runners", func() bool {
		o := owners(t, d)
		return o[ps[0].addr] == 100 && o[ps[1].addr] == 100 && o[ps[2].addr] == 100
	})
	c := client(t, url)

	// finished early: must be gone by the check
	var early []string
	for i := range 20 {
		h, err := retQuick.Start(ctx, c, i)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := h.Result(ctx); err != nil || v != i+3 {
			t.Fatalf("quick run %d: %v %v", i, v, err)
		}
		early = append(early, h.ID)
	}
	// unfinished: must stay, then complete
	type pending struct {
		id   string
		kind string
		in   int
		h    *voltro.Handle[int]
	}
	var live []pending
	add := func(kind string, w *voltro.Workflow[int, int], in int) {
		h, err := w.Start(ctx, c, in)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, pending{id: h.ID, kind: kind, in: in, h: h})
	}
	for i := range 5 {
		add("sleeper", retSleeper, i)
		add("waiter", retWaiter, 100+i)
		add("waiter-with-timer", retWaiter, -45) // its timer fires after the run is gone
		add("parent", retParent, 200+i)
	}
	testwait.For(t, 60*time.Second, "every long run suspended", func() bool {
		return r.count(t, `SELECT count(*) FROM voltro_workflow_executions WHERE status = 'suspended'`) == len(live)
	})
	children := map[string]string{} // parent -> child
	for _, l := range live {
		if l.kind == "parent" {
			children[l.id] = l.id + "/0"
		}
	}
	testwait.For(t, 30*time.Second, "every parent's child finished", func() bool {
		for _, ch := range children {
			if r.count(t, `SELECT count(*) FROM voltro_workflow_executions WHERE id = ? AND status = 'completed'`, ch) != 1 {
				return false
			}
		}
		return true
	})
	began := time.Now()

	// live traffic all along: quick runs keep starting and finishing
	stop := make(chan struct{})
	var traffic sync.WaitGroup
	var trafficErr error
	traffic.Add(1)
	go func() {
		defer traffic.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := retQuick.Run(ctx, c, i); err != nil {
				trafficErr = err
				return
			}
		}
	}()

	// about 30 s on: sample who sweeps meanwhile
	maxSweeping, swept := 0, false
	for time.Since(began) < 30*time.Second {
		n := 0
		for _, p := range ps {
			rt := inspectRetention(t, p)
			if rt.Runs != "5s" {
				t.Fatalf("%s: retention in force %q, want 5s", p.name, rt.Runs)
			}
			if rt.Sweeping {
				n++
			}
			if rt.Deleted[store.TableExecutions] > 0 {
				swept = true
			}
		}
		maxSweeping = max(maxSweeping, n)
		time.Sleep(time.Second)
	}
	if maxSweeping != 1 || !swept {
		t.Fatalf("instances sweeping at once: at most %d (want 1); any swept runs: %v", maxSweeping, swept)
	}

	// every finished run older than the retention is gone with its rows
	for _, id := range early {
		if rows := r.rowsOf(t, id); len(rows) > 0 {
			t.Fatalf("run %s finished %s ago and still has rows: %v", id, time.Since(began), rows)
		}
	}
	cut := r.now(t).Add(-keep - slack)
	if n := r.count(t, `SELECT count(*) FROM voltro_workflow_executions e WHERE e.status IN ('completed', 'failed', 'cancelled')
		AND e.finished_at < ? AND NOT EXISTS (SELECT 1 FROM voltro_workflow_executions p WHERE p.id = e.parent_id AND p.status IN ('running', 'suspended'))`, cut.UTC()); n != 0 {
		t.Fatalf("%d finished runs older than %s are still stored", n, keep+slack)
	}
	if n := r.count(t, `SELECT count(*) FROM voltro_messages WHERE state = 'processed' AND processed_at < ?`, cut.UTC()); n != 0 {
		t.Fatalf("%d processed messages older than %s are still stored", n, keep+slack)
	}
	// every unfinished run, and every finished child of one, is intact
	for _, l := range live {
		rows := r.rowsOf(t, l.id)
		if rows[store.TableExecutions] != 1 || rows[store.TableStartContexts] != 1 || (l.kind == "sleeper" && rows[store.TableJournal] != 1) ||
			(l.kind == "parent" && rows[store.TableJournal] != 1) {
			t.Fatalf("%s run %s lost rows: %v", l.kind, l.id, rows)
		}
		if r.count(t, `SELECT count(*) FROM voltro_workflow_executions WHERE id = ? AND status = 'suspended'`, l.id) != 1 {
			t.Fatalf("%s run %s is no longer suspended", l.kind, l.id)
		}
	}
	for p, ch := range children {
		if rows := r.rowsOf(t, ch); rows[store.TableExecutions] != 1 || rows[store.TableJournal] != 3 {
			t.Fatalf("the finished child %s of the unfinished parent %s lost rows: %v", ch, p, rows)
		}
	}

	// they complete (each result is read as soon as it is there: a run
	// deleted before its result was read is as good as never started to a
	// waiter, which is why retention must outlast any wait for a result)
	results := make([]error, len(live))
	var waiting sync.WaitGroup
	for i, l := range live {
		waiting.Add(1)
		go func() {
			defer waiting.Done()
			want := l.in + 2 // sleeper
			switch l.kind {
			case "waiter", "waiter-with-timer":
				want = l.in + 1
			case "parent":
				want = l.in + 3 + 1
			}
			if v, err := l.h.Result(ctx); err != nil || v != want {
				results[i] = fmt.Errorf("%s run %s: %v %v, want %d", l.kind, l.id, v, err, want)
			}
		}()
	}
	for _, l := range live {
		if l.kind == "waiter" || l.kind == "waiter-with-timer" || l.kind == "parent" {
			if ok, err := c.Signal(ctx, l.id, "go", 1); err != nil || !ok {
				t.Fatalf("signal %s: %v %v", l.id, ok, err)
			}
		}
	}
	waiting.Wait()
	for _, err := range results {
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	traffic.Wait()
	if trafficErr != nil {
		t.Fatalf("live traffic during the sweeps: %v", trafficErr)
	}

	// and then they go too, children with their parents
	testwait.For(t, 2*(keep+slack), "the completed long runs and their children to go", func() bool {
		for _, l := range live {
			if len(r.rowsOf(t, l.id)) > 0 {
				return false
			}
		}
		for _, ch := range children {
			if len(r.rowsOf(t, ch)) > 0 {
				return false
			}
		}
		return true
	})
	// The waiters' timers fired after their runs were gone: delivered to
	// no run, they are done with, not retried into dead letters.
	testwait.For(t, 30*time.Second, "the orphaned timers to be delivered", func() bool {
		return r.count(t, `SELECT count(*) FROM voltro_messages WHERE state IN ('pending', 'claimed')`) == 0
	})
	if n := r.count(t, `SELECT count(*) FROM voltro_messages WHERE state = 'dead'`); n != 0 {
		t.Fatalf("%d dead letters: a message for a deleted run must not fail", n)
	}
	t.Logf("%s: %d runs gone with their rows in %s", dialect, len(early)+len(live)+len(children), time.Since(began).Round(time.Second))
}
