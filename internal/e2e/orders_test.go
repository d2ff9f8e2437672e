package e2e

// Issue 14's user-level test, second half: the order service of
// testdata/orders (voltrotest/ordertx_test.go runs the same code on a
// virtual clock) as two processes on PostgreSQL, each placing orders (its
// row and its run in one transaction) over HTTP; then a rolling deploy,
// one process at a time, to v2 (-tags v2), which adds a fraud screen behind
// voltro.Patched. The orders in their return window when v1 leaves finish
// on v2 with v1's branch; orders placed on v2 screen. Real processes run on
// the wall clock, so a day of an order's timeline lasts 1 s on v1 and
// 100 ms on v2 (-day, recorded in each order's input).

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/e2e/testdata/orders"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// How long a day lasts in the orders each version places. v1's return
// window (7 days) must outlast the deploy that follows the shipments.
const (
	v1Day = time.Second
	v2Day = 100 * time.Millisecond
)

// orderShop is the test's view of the service: its processes, a client
// and a pool on the same database.
type orderShop struct {
	t   *testing.T
	ctx context.Context
	c   *voltro.Client
	db  *sql.DB
}

// place POSTs an order to p and returns the HTTP status.
func (s *orderShop) place(p *proc, id string, amount int) int {
	s.t.Helper()
	base, ok := p.find("ORDERS ")
	if !ok {
		s.t.Fatalf("%s printed no ORDERS line", p.name)
	}
	body, _ := json.Marshal(orders.Order{ID: id, Amount: amount})
	req, _ := http.NewRequestWithContext(s.ctx, http.MethodPost, base+"/orders", bytes.NewReader(body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("placing %s on %s: %v", id, p.name, err)
	}
	_ = res.Body.Close()
	return res.StatusCode
}

func runOf(id string) string { return voltro.ExecutionID(orders.Flow.Name(), id) }

// ship signals each order's shipment; first, with await, it waits for the
// order to await it (else the signal is stored until the run asks for it,
// and cannot lose a race with the wait's timeout).
func (s *orderShop) ship(await bool, ids ...string) {
	s.t.Helper()
	for _, id := range ids {
		testwait.For(s.t, 60*time.Second, id+" to await its shipment", func() bool {
			st, err := s.c.Get(s.ctx, runOf(id))
			return !await || err == nil && st.Waiting != nil && st.Waiting.Kind == voltro.WaitSignal && st.Waiting.Name == orders.Signal
		})
		if _, err := s.c.Signal(s.ctx, runOf(id), orders.Signal, "tracking-"+id); err != nil {
			s.t.Fatal(err)
		}
	}
}

// receipt waits for the order's run and returns its receipt.
func (s *orderShop) receipt(id string) orders.Receipt {
	s.t.Helper()
	r, err := voltro.GetHandle[orders.Receipt](s.c, runOf(id)).Result(s.ctx)
	if err != nil {
		s.t.Fatalf("order %s: %v", id, err)
	}
	return r
}

// unfinished fails the test if one of the runs of ids has finished.
func (s *orderShop) unfinished(when string, ids ...string) {
	s.t.Helper()
	for _, id := range ids {
		st, err := s.c.Get(s.ctx, runOf(id))
		if err != nil || st.Status.Terminal() {
			s.t.Fatalf("%s: order %s is %s (%v); the v1 orders must still be in flight (v1Day too short for this machine?)", when, id, st.Status, err)
		}
	}
}

// handover starts next, waits for it to serve shards, stops old and
// waits for its shards to go to the ones left.
func handover(t *testing.T, d store.Driver, old, next *proc) {
	t.Helper()
	testwait.For(t, 60*time.Second, next.name+" to serve shards", func() bool { return owners(t, d)[next.addr] > 0 })
	old.term()
	testwait.For(t, 60*time.Second, old.name+"'s shards to be taken over", func() bool {
		o := owners(t, d)
		return o[old.addr] == 0 && o[next.addr] > 0
	})
}

func TestOrderServiceRollingDeploy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	dir := t.TempDir()
	v1, v2 := buildVersions(t, "./testdata/orders/service", dir)
	built := time.Now()
	url := testdb.Postgres(t, "e2e_orders")
	env := map[string]string{"DB_URL": url, "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1s"}
	serve := func(name, bin string, day time.Duration) *proc {
		return startBinary(t, name, exec.Command(bin, "-day", day.String()), nil, env)
	}
	a := serve("orders-a", v1, v1Day)
	b := serve("orders-b", v1, v1Day)
	s := openShop(t, ctx, url)
	d := look(t, url)
	// The v1 fleet settles first, a done handing half its shards to b:
	// payments' 1 s sleeps set while that handover was under way fired ten
	// seconds late (a poll interval; seen in the runs dumped by one of 4
	// failures in about 45 runs), which this timeline of 1 s days cannot
	// absorb (o-4's 3 s shipment window ran out while the test waited on
	// o-3; o-1 finished before the deploy). The late timer was a delivery
	// loop that read the next due time after its claims, missing a timer
	// falling due in between (fixed; engine's
	// TestTimersThroughHandoversAndTakeovers); the wait stays, as this
	// timeline is not about handovers.
	cfg, err := config.FromEnv(func(string) string { return "" }, url)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 60*time.Second, "the v1 processes to share the shards", func() bool {
		o := owners(t, d)
		return o[a.addr] > 0 && o[b.addr] > 0 && o[a.addr]+o[b.addr] == cfg.ShardCount && a.logged("workflow runner: shards handed over")
	})

	// v1, two processes: orders placed on either, one never shipped.
	placed := []string{"o-1", "o-2", "o-3", "o-4", "o-5"}
	for i, id := range placed {
		if got := s.place([]*proc{a, b}[i%2], id, 100*(i+1)); got != http.StatusCreated {
			t.Fatalf("placing %s: HTTP %d", id, got)
		}
	}
	// Refused rows roll their runs back: a zero amount, a repeated id.
	if got := s.place(a, "o-bad", 0); got != http.StatusUnprocessableEntity {
		t.Fatalf("an order of amount 0: HTTP %d, want 422", got)
	}
	if got := s.place(b, "o-1", 1); got != http.StatusUnprocessableEntity {
		t.Fatalf("o-1 placed again: HTTP %d, want 422", got)
	}
	shipped := placed[:4]
	s.ship(true, shipped...) // o-5 is refunded when its 3 days are up
	deployFrom := time.Now()

	// The rolling deploy, one process at a time, while the shipped orders
	// sit in their return window.
	c := serve("orders-c", v2, v2Day)
	handover(t, d, a, c)
	e := serve("orders-e", v2, v2Day)
	handover(t, d, b, e)
	deployed := time.Since(deployFrom)
	s.unfinished("when the last v1 process left", shipped...)
	if got := s.place(c, "n-1", 7); got != http.StatusCreated {
		t.Fatalf("placing n-1 on v2: HTTP %d", got)
	}
	if got := s.place(e, "n-2", 7); got != http.StatusCreated {
		t.Fatalf("placing n-2 on v2: HTTP %d", got)
	}
	s.ship(false, "n-1", "n-2") // at once: their 3 days last 300 ms

	for i, id := range shipped {
		want := orders.Receipt{Order: id, Charge: fmt.Sprintf("captured:auth-%s-%d", id, 100*(i+1)), Outcome: "delivered", ClosedBy: "v2"}
		if got := s.receipt(id); got != want {
			t.Errorf("an order placed on v1, closed on v2: %+v, want %+v (v1's branch: not screened)", got, want)
		}
	}
	if got := s.receipt("o-5"); got.Outcome != "refunded" || got.Screened {
		t.Errorf("the order never shipped: %+v, want refunded, not screened", got)
	}
	for _, id := range []string{"n-1", "n-2"} {
		want := orders.Receipt{Order: id, Charge: "captured:auth-" + id + "-7", Screened: true, Outcome: "delivered", ClosedBy: "v2"}
		if got := s.receipt(id); got != want {
			t.Errorf("an order placed on v2: %+v, want %+v (v2's branch: screened)", got, want)
		}
	}
	s.oneRunPerRow(append(slices.Clone(placed), "n-1", "n-2"), "o-bad")
	t.Logf("built both versions in %s; the rolling deploy of 2 processes took %s; the whole test %s",
		built.Sub(began).Round(time.Millisecond), deployed.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// buildVersions builds pkg as v1 and, with -tags v2, as v2, both at once.
func buildVersions(t *testing.T, pkg, dir string) (v1, v2 string) {
	t.Helper()
	v1, v2 = filepath.Join(dir, "v1"), filepath.Join(dir, "v2")
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	for i, args := range [][]string{{"build", "-o", v1, pkg}, {"build", "-tags", "v2", "-o", v2, pkg}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = exec.Command("go", args...).CombinedOutput()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("building v%d of %s: %v\n%s", i+1, pkg, err, outs[i])
		}
	}
	return v1, v2
}

// openShop connects a client and a pool (pgx, as the service's own
// handlers would) to the service's database.
func openShop(t *testing.T, ctx context.Context, url string) *orderShop {
	t.Helper()
	c, err := voltro.NewClient(ctx, voltro.WithEnv(func(k string) string {
		return map[string]string{"DB_URL": url, "VOLTRO_CLUSTER_SECRET": "e2e-secret"}[k]
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(2) // within the connection budget of scripts/test
	t.Cleanup(func() { _ = db.Close() })
	// Registered after the processes' cleanups, so it runs before them,
	// while the runs are as the failure left them.
	t.Cleanup(func() {
		if t.Failed() {
			dumpRuns(t, db)
		}
	})
	return &orderShop{t: t, ctx: ctx, c: c, db: db}
}

// dumpRuns logs every run and every message not yet processed: where the
// runs of a failed test stood.
func dumpRuns(t *testing.T, db *sql.DB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, q := range []string{
		`SELECT id, status, coalesce(waiting_on, ''), coalesce(parent_id, ''), coalesce(runner, ''), updated_at::text FROM voltro_workflow_executions ORDER BY created_at`,
		`SELECT id::text, shard, entity_id, tag, state, deliver_at::text, coalesce(claimed_by, ''), attempts::text FROM voltro_messages WHERE state <> 'processed' ORDER BY id`,
		`SELECT execution_id, seq::text, kind, name, coalesce(finished_at::text, '') FROM voltro_workflow_journal ORDER BY execution_id, seq`,
	} {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Logf("dump: %v", err)
			continue
		}
		cols, _ := rows.Columns()
		var b strings.Builder
		for rows.Next() {
			vals := make([]string, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				b.WriteString(err.Error())
				break
			}
			b.WriteString(strings.Join(vals, " | ") + "\n")
		}
		rows.Close()
		t.Logf("%s\n%s", q, b.String())
	}
}

// oneRunPerRow checks that the table holds exactly the orders ids, each
// with its own run, that there are no other order runs, that every run
// (orders and their payments) completed, and that refused has neither.
func (s *orderShop) oneRunPerRow(ids []string, refused string) {
	s.t.Helper()
	rows, err := orders.Rows(s.ctx, s.db)
	if err != nil {
		s.t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.ID)
		if r.RunID != runOf(r.ID) {
			s.t.Errorf("order %s names run %s, want %s", r.ID, r.RunID, runOf(r.ID))
		}
	}
	slices.Sort(ids)
	if !slices.Equal(got, ids) {
		s.t.Errorf("the orders table holds %v, want %v", got, ids)
	}
	for _, name := range []string{orders.Flow.Name(), orders.Payment.Name()} {
		runs, err := s.c.List(s.ctx, voltro.ListFilter{Name: name, Limit: 100})
		if err != nil {
			s.t.Fatal(err)
		}
		if len(runs) != len(ids) {
			s.t.Errorf("%d runs of %s for %d orders, want one each", len(runs), name, len(ids))
		}
		for _, r := range runs {
			if r.Status != voltro.StatusCompleted {
				s.t.Errorf("run %s of %s is %s (%v), want completed", r.ID, name, r.Status, r.Error)
			}
			if name == orders.Flow.Name() && !slices.ContainsFunc(ids, func(id string) bool { return runOf(id) == r.ID }) {
				s.t.Errorf("run %s has no order row", r.ID)
			}
		}
	}
	if _, err := s.c.Get(s.ctx, runOf(refused)); !errors.Is(err, voltro.ErrNotFound) {
		s.t.Errorf("the run of the refused order %s: %v, want ErrNotFound", refused, err)
	}
}
