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
