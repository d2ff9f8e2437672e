package storetest

// The runs listing at a million runs (the dashboard's Workflows panel):
// one page of 50 per operation, newest first, deep in the history by
// keyset, and under each filter, on a database seeded once with
// store.HistorySeeder and kept for the next run.

import (
	"context"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// ListBenchRuns is how many finished runs BenchListRuns lists over.
const ListBenchRuns = 1_000_000

// listBenchName is the most common of the seeded runs' workflow names;
// listBenchRare the rarest.
const (
	listBenchName = "bench.list"
	listBenchRare = "bench.rare"
)

// listBenchMix is the seeded history: a few names and final statuses in
// these shares (in thousandths), each spread over the whole period, so a
// filter by name or status is selective.
var listBenchMix = []struct {
	name   string
	status store.ExecStatus
	share  int
}{
	{listBenchName, store.ExecCompleted, 560}, {listBenchName, store.ExecFailed, 100}, {listBenchName, store.ExecCancelled, 40},
	{"bench.other", store.ExecCompleted, 200}, {"bench.other", store.ExecFailed, 50},
	{listBenchRare, store.ExecCompleted, 40}, {listBenchRare, store.ExecFailed, 10},
}

// BenchListRuns seeds d (a kept database) up to ListBenchRuns finished
// runs if it has fewer, then times one page of each kind of listing.
func BenchListRuns(b *testing.B, d store.Driver) {
	ctx := context.Background()
	w, seeder := d, d.Capabilities().Bench.Seeder
	if seeder == nil {
		b.Skipf("the %s store cannot seed a history (no Capabilities.Bench.Seeder)", d.Dialect())
	}
	n, err := d.CountExecutions(ctx, store.ExecCompleted, store.ExecFailed, store.ExecCancelled)
	if err != nil {
		b.Fatal(err)
	}
	to := time.Now().Add(-24 * time.Hour)
	from := to.Add(-30 * 24 * time.Hour)
	if have := n[store.ExecCompleted] + n[store.ExecFailed] + n[store.ExecCancelled]; have < ListBenchRuns {
		b.Logf("seeding %d finished runs (kept for the next run)", ListBenchRuns-have)
		t0 := time.Now()
		for _, m := range listBenchMix {
			if err := seeder.SeedHistory(ctx, store.HistorySeed{N: (ListBenchRuns - have) * m.share / 1000, Name: m.name, Status: m.status,
				From: from, To: to, Shards: []string{"default/0", "default/1", "default/2", "default/3"}}); err != nil {
				b.Fatal(err)
			}
		}
		b.Logf("seeded in %s", time.Since(t0).Round(time.Second))
		if a := d.Capabilities().Bench.Analyzer; a != nil {
			if err := a.AnalyzeHistory(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	mid := from.Add(to.Sub(from) / 2)
	cases := []struct {
		name string
		f    store.ExecutionFilter
	}{
		{"Newest", store.ExecutionFilter{}},
		{"Deep", store.ExecutionFilter{After: &store.ExecutionCursor{CreatedAt: mid, ID: "wf_~"}}},
		{"Status", store.ExecutionFilter{Status: store.ExecCompleted, After: &store.ExecutionCursor{CreatedAt: mid, ID: "wf_~"}}},
		{"StatusFailed", store.ExecutionFilter{Status: store.ExecFailed, After: &store.ExecutionCursor{CreatedAt: mid, ID: "wf_~"}}},
		{"StatusNone", store.ExecutionFilter{Status: store.ExecRunning}},
		{"Name", store.ExecutionFilter{Name: listBenchName, After: &store.ExecutionCursor{CreatedAt: mid, ID: "wf_~"}}},
		{"NameRare", store.ExecutionFilter{Name: listBenchRare, After: &store.ExecutionCursor{CreatedAt: mid, ID: "wf_~"}}},
		{"NameRareFailed", store.ExecutionFilter{Name: listBenchRare, Status: store.ExecFailed, After: &store.ExecutionCursor{CreatedAt: mid, ID: "wf_~"}}},
		{"NameStatusNone", store.ExecutionFilter{Name: listBenchName, Status: store.ExecRunning}},
		{"Window", store.ExecutionFilter{Since: mid.Add(-time.Hour), Until: mid}},
		{"WindowNameNone", store.ExecutionFilter{Name: "nosuch", Since: mid.Add(-time.Hour), Until: mid}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			c.f.Limit = 51 // a page and whether there is a next one
			for b.Loop() {
				if _, err := w.ListExecutions(ctx, c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
