package dashboard_test

// What one read of a panel or of the run page costs and returns: the
// Schedules panel is a fixed number of store reads however many
// schedules there are, and a long run's page is bounded.

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	storeopen "github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/testdb"
)

// countingStore is the real PostgreSQL store, counting the reads the
// Schedules panel makes of it.
type countingStore struct {
	*postgres.Store
	calls atomic.Int64
}

func (c *countingStore) Now(ctx context.Context) (time.Time, error) {
	c.calls.Add(1)
	return c.Store.Now(ctx)
}

func (c *countingStore) ScheduleSummaries(ctx context.Context) ([]store.ScheduleSummary, error) {
	c.calls.Add(1)
	return c.Store.ScheduleSummaries(ctx)
}

func (c *countingStore) ScheduleRuns(ctx context.Context, schedule string, limit int) ([]store.ScheduleRun, error) {
	c.calls.Add(1)
	return c.Store.ScheduleRuns(ctx, schedule, limit)
}

func (c *countingStore) LatestScheduleRuns(ctx context.Context, per int) (map[string][]store.ScheduleRun, error) {
	c.calls.Add(1)
	return c.Store.LatestScheduleRuns(ctx, per)
}

func (c *countingStore) ScheduleOverview(ctx context.Context, since time.Time) (*store.ScheduleOverview, error) {
	c.calls.Add(1)
	return c.Store.ScheduleOverview(ctx, since)
}

// TestSchedulesPanelReadsConstant: a read of the Schedules panel with 40
// schedules makes as many store reads as with 2 (it made one more per
// schedule, up to 4 reads a second while a page is open).
func TestSchedulesPanelReadsConstant(t *testing.T) {
	ctx := context.Background()
	url := testdb.Postgres(t, "dashsched")
	cfg, err := config.FromEnv(func(string) string { return "" }, url)
	if err != nil {
		t.Fatal(err)
	}
	d, err := storeopen.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	pg, ok := d.(*postgres.Store)
	if !ok {
		t.Fatalf("the PostgreSQL store is a %T", d)
	}
	cs := &countingStore{Store: pg}
	srv, _ := serve(t, dashboard.Config{Store: cs})
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	add := func(from, to int) {
		for i := from; i < to; i++ {
			name := "sched-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			for j := range 3 {
				r := store.ScheduleRun{Schedule: name, ScheduledAt: at.Add(time.Duration(j) * time.Second), ReplicaID: "r",
					Outcome: store.ScheduleOutcomeWonLock, Status: store.ScheduleSucceeded}
				if _, err := pg.InsertScheduleRun(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	reads := func(want int) int64 {
		before := cs.calls.Load()
		code, body := call(t, "GET", srv.URL+dashboard.Prefix+"api/schedules", "", "")
		if code != http.StatusOK {
			t.Fatalf("schedules: %d %s", code, body)
		}
		var v struct {
			Schedules []struct {
				Recent []store.ScheduleRun `json:"recent"`
			} `json:"schedules"`
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Schedules) != want || len(v.Schedules[0].Recent) != 3 {
			t.Fatalf("%d schedules (want %d), the first with %d firings (want 3)", len(v.Schedules), want, len(v.Schedules[0].Recent))
		}
		return cs.calls.Load() - before
	}
	add(0, 2)
	few := reads(2)
	add(2, 40)
	many := reads(40)
	t.Logf("store reads for one Schedules read: %d with 2 schedules, %d with 40", few, many)
	if many != few {
		t.Fatalf("the Schedules panel's reads grow with the schedules: %d with 2, %d with 40", few, many)
	}
}

// TestRunPageBounded: the page of a run of many steps holds the newest
// of its journal entries (and says how many there are; ?more=N asks for
// more), and a failed run's error is rendered, code and message.
func TestRunPageBounded(t *testing.T) {
	srv, m := serve(t, dashboard.Config{})
	ctx := context.Background()
	const shard, owner, steps = "default/0", "dash-test", 1500
	x := store.Execution{ID: "long", Name: "order", Shard: shard, Input: []byte(`{}`)}
	if _, _, _, err := m.StartExecution(ctx, x, store.StartContext{}, &store.Message{Shard: shard, EntityType: "workflow/order", EntityID: "long", Tag: "start"}, nil); err != nil {
		t.Fatal(err)
	}
	mode, _, err := m.ResolveLockMode(ctx, store.LockAuto)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.NewLocker(ctx, mode, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	epoch, ok, err := l.Acquire(ctx, shard, time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	f := store.Fence{Owner: owner, Epoch: epoch}
	for i := range steps {
		e := store.JournalEntry{ExecutionID: "long", Seq: i, Kind: store.JournalStep, Name: "s", Result: []byte(`"x"`), Attempts: 1, Runner: owner, StartedAt: time.Now(), FinishedAt: time.Now()}
		if err := store.AppendJournal(ctx, m, shard, f, e); err != nil {
			t.Fatal(err)
		}
	}
	failure := errs.Encode(errs.New(errs.CodeHandler, "the card was declined"))
	if err := store.UpdateExecution(ctx, m, store.ExecutionUpdate{ID: "long", Shard: shard, Fence: f, Status: store.ExecFailed, Error: failure, Runner: owner}); err != nil {
		t.Fatal(err)
	}
	page := func(q string) (int, []struct{ Seq int }, runView) {
		code, body := call(t, "GET", srv.URL+dashboard.Prefix+"api/runs/long"+q, "", "")
		var v struct {
			runView
			Journal []struct{ Seq int }
		}
		if code == 200 {
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatal(err)
			}
		}
		return len(body), v.Journal, v.runView
	}
	size, js, v := page("")
	t.Logf("the page of a run of %d steps: %d bytes, %d journal entries of %d", steps, size, len(js), v.Totals.Journal)
	if len(js) == 0 || len(js) >= steps || js[len(js)-1].Seq != steps-1 || v.Totals.Journal != steps {
		t.Fatalf("%d journal entries ending at seq %v, total %d: want the newest few of %d", len(js), js[len(js)-1:], v.Totals.Journal, steps)
	}
	if size > 100_000 {
		t.Fatalf("the page of a run of %d steps is %d bytes", steps, size)
	}
	if _, more, _ := page("?more=1000"); len(more) != 1000 || more[999].Seq != steps-1 {
		t.Fatalf("?more=1000: %d entries", len(more))
	}
	if code, _ := call(t, "GET", srv.URL+dashboard.Prefix+"api/runs/long?more=lots", "", ""); code != http.StatusBadRequest {
		t.Fatalf("?more=lots: %d, want 400", code)
	}
	if v.Status != "failed" || v.Error == nil || v.Error.Code != string(errs.CodeHandler) || v.Error.Message != "the card was declined" {
		t.Fatalf("the failed run's error: status %q, %+v", v.Status, v.Error)
	}
}

type runView struct {
	Status string
	Error  *struct{ Code, Message string }
	Totals struct{ Journal, Attempts, Events int }
}
