package storetest

// Benchmark support (store/bench.go): each part is optional, and a store
// that does not implement one is skipped with the reason the benchmark
// gives.

import (
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// BenchSiblingDatabase is the database the DatabaseCreator case creates
// (twice: the second call finds it) and leaves on the server for the next
// run.
const BenchSiblingDatabase = "voltro_storetest_sibling"

// runBench runs the benchmark-support cases.
func runBench(t *testing.T, factory Factory) {
	t.Run("CommitRate", func(t *testing.T) { testCommitRate(t, fresh(t, factory)) })
	t.Run("StatementCounter", func(t *testing.T) { testStatementCounter(t, fresh(t, factory)) })
	t.Run("CreateDatabase", func(t *testing.T) { testCreateDatabase(t, fresh(t, factory)) })
	t.Run("AnalyzeHistory", func(t *testing.T) { testAnalyzeHistory(t, fresh(t, factory)) })
}

func testCommitRate(t *testing.T, d store.Driver) {
	p := d.Capabilities().Bench.CommitRate
	if p == nil {
		t.Skipf("the %s store cannot measure its commit rate (no Capabilities.Bench.CommitRate)", d.Dialect())
	}
	// The probe's table is the migrations', there before any probe.
	if db := d.Capabilities().SQL; db != nil {
		rows := must(db.QueryContext(ctxT(t), "SELECT v FROM "+store.BenchCommitTable))(t)
		check(t, rows.Close())
	}
	// 8, as voltro bench asks: the probe opens connections of its own, so an
	// application pool capped below 8 (DB_MAX_CONNS) cannot starve it. The
	// third run finds the probe table made and emptied.
	for _, conns := range []int{1, 2, 8} {
		if rate := must(p.CommitRate(ctxT(t), conns, 200*time.Millisecond))(t); rate <= 0 {
			t.Fatalf("%d connections: %v commits/s", conns, rate)
		}
	}
}

func testStatementCounter(t *testing.T, d store.Driver) {
	c := d.Capabilities().Bench.Statements
	if c == nil {
		t.Skipf("no server counters for %s (no Capabilities.Bench.Statements)", d.Dialect())
	}
	info := c.StatementCounter()
	if info.Note == "" || info.Settle < 0 || info.Tail < 0 {
		t.Fatalf("counter %+v", info)
	}
	a := must(c.CountStatements(ctxT(t)))(t)
	b := must(c.CountStatements(ctxT(t)))(t)
	if a < 0 || b < a {
		t.Fatalf("the counter went from %v to %v", a, b)
	}
}

func testCreateDatabase(t *testing.T, d store.Driver) {
	c := d.Capabilities().Bench.Databases
	if c == nil {
		t.Skipf("the %s store has no server to create a database on (no Capabilities.Bench.Databases)", d.Dialect())
	}
	check(t, c.CreateDatabase(ctxT(t), BenchSiblingDatabase))
	check(t, c.CreateDatabase(ctxT(t), BenchSiblingDatabase))
}

func testAnalyzeHistory(t *testing.T, d store.Driver) {
	a := d.Capabilities().Bench.Analyzer
	if a == nil {
		t.Skipf("the %s store has no planner statistics to refresh (no Capabilities.Bench.Analyzer)", d.Dialect())
	}
	check(t, a.AnalyzeHistory(ctxT(t)))
}
