package storetest

// Listing runs page by page: the keyset cursor and the time bounds of
// ExecutionFilter, checked against the whole listing each store returns.

import (
	"fmt"
	"testing"

	"github.com/voltro/voltro/internal/store"
)

func testListPages(t *testing.T, w store.Workflows) {
	ctx := ctxT(t)
	for i := range 7 {
		x := newExec(fmt.Sprintf("page%d", i))
		if i%2 == 1 {
			x.Name = "other"
		}
		_, _, _, err := w.StartExecution(ctx, x, store.StartContext{}, startMsg(x.ID), nil)
		check(t, err)
	}
	all := must(w.ListExecutions(ctx, store.ExecutionFilter{}))(t)
	if len(all) != 7 {
		t.Fatalf("want 7 runs, got %d", len(all))
	}
	ids := func(xs []store.Execution) []string {
		out := []string{}
		for _, x := range xs {
			out = append(out, x.ID)
		}
		return out
	}
	pages := func(f store.ExecutionFilter) []string {
		f.Limit = 3
		var got []string
		for n := 0; ; n++ {
			page := must(w.ListExecutions(ctx, f))(t)
			got = append(got, ids(page)...)
			if len(page) < f.Limit || n > 10 {
				return got
			}
			f.After = store.CursorOf(page[len(page)-1])
		}
	}
	if got, want := fmt.Sprint(pages(store.ExecutionFilter{})), fmt.Sprint(ids(all)); got != want {
		t.Fatalf("pages of 3 with a cursor: got %s, want the whole listing %s", got, want)
	}
	var orders []store.Execution
	for _, x := range all {
		if x.Name == "order" {
			orders = append(orders, x)
		}
	}
	if got, want := fmt.Sprint(pages(store.ExecutionFilter{Name: "order"})), fmt.Sprint(ids(orders)); got != want {
		t.Fatalf("pages by name: got %s, want %s", got, want)
	}
	// time bounds: Since is inclusive, Until exclusive
	since, until := all[5].CreatedAt, all[1].CreatedAt
	var bounded []store.Execution
	for _, x := range all {
		if !x.CreatedAt.Before(since) && x.CreatedAt.Before(until) {
			bounded = append(bounded, x)
		}
	}
	got := must(w.ListExecutions(ctx, store.ExecutionFilter{Since: since, Until: until}))(t)
	if fmt.Sprint(ids(got)) != fmt.Sprint(ids(bounded)) || len(bounded) == 0 {
		t.Fatalf("since %v until %v: got %s, want %s", since, until, ids(got), ids(bounded))
	}
	last := must(w.ListExecutions(ctx, store.ExecutionFilter{After: store.CursorOf(all[6])}))(t)
	if len(last) != 0 {
		t.Fatalf("after the oldest run: %s", ids(last))
	}
}
