package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/sqlite"
)

// oldScheduleDDL is what versions before migration 0400 ran at run time
// (internal/schedule's Init).
var oldScheduleDDL = []string{
	`CREATE TABLE IF NOT EXISTS "_voltro_schedule_claims" (
		"claimKey" TEXT PRIMARY KEY,
		"schedule" TEXT NOT NULL,
		"scheduledAt" TEXT NOT NULL,
		"replicaId" TEXT NOT NULL,
		"claimedAt" TEXT NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS "_voltro_schedule_claims_claimedAt" ON "_voltro_schedule_claims" ("claimedAt")`,
	`CREATE TABLE IF NOT EXISTS "_voltro_schedule_runs" (
		"id" INTEGER PRIMARY KEY AUTOINCREMENT,
		"schedule" TEXT NOT NULL,
		"scheduledAt" TEXT NOT NULL,
		"replicaId" TEXT NOT NULL,
		"coordinationOutcome" TEXT NOT NULL,
		"status" TEXT NOT NULL,
		"started" TEXT,
		"finished" TEXT,
		"error" TEXT,
		"heartbeatAt" TEXT NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS "_voltro_schedule_runs_tick" ON "_voltro_schedule_runs" ("schedule", "scheduledAt")`,
	`CREATE INDEX IF NOT EXISTS "_voltro_schedule_runs_status" ON "_voltro_schedule_runs" ("status", "replicaId")`,
	`CREATE TABLE IF NOT EXISTS "_voltro_schedules" (
		"name" TEXT PRIMARY KEY,
		"spec" TEXT NOT NULL,
		"timeZone" TEXT NOT NULL,
		"coordination" TEXT NOT NULL,
		"overlap" TEXT NOT NULL,
		"catchUp" INTEGER NOT NULL,
		"replicaId" TEXT NOT NULL,
		"updatedAt" TEXT NOT NULL)`,
}

// TestSchedulesUpgrade: a file whose schedule tables an older version
// created at run time, with rows in them (times from SQLite's own clock,
// as that version wrote them), migrates to 0400, and the store reads and
// extends what the old code wrote.
func TestSchedulesUpgrade(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const now = `strftime('%Y-%m-%d %H:%M:%f','now')`
	for _, q := range append(oldScheduleDDL,
		`INSERT INTO "_voltro_schedule_claims" VALUES ('old@1777629607', 'old', '2026-05-01 10:00:07.000', 'pod-a', `+now+`)`,
		`INSERT INTO "_voltro_schedule_runs" ("schedule", "scheduledAt", "replicaId", "coordinationOutcome", "status", "started", "finished", "error", "heartbeatAt")
			VALUES ('old', '2026-05-01 10:00:07.000', 'pod-a', 'wonLock', 'failed', `+now+`, `+now+`, 'boom', `+now+`)`,
		`INSERT INTO "_voltro_schedules" VALUES ('old', '@every 5s', 'UTC', 'advisoryLock', 'skip', 1, 'pod-a', `+now+`)`,
	) {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate over the old tables: %v", err)
	}
	at := time.Date(2026, 5, 1, 10, 0, 7, 0, time.UTC)
	if won, err := s.ClaimScheduleTick(ctx, store.ScheduleClaim{Schedule: "old", ScheduledAt: at, ReplicaID: "pod-b"}); err != nil || won {
		t.Fatalf("the old claim must still hold its tick: %v %v", won, err)
	}
	runs, err := s.ScheduleRuns(ctx, "old", 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("old runs: %+v %v", runs, err)
	}
	if r := runs[0]; !r.ScheduledAt.Equal(at) || r.Status != store.ScheduleFailed || r.Error != "boom" || time.Since(r.Started) > time.Minute || time.Since(r.Started) < 0 {
		t.Fatalf("old run: %+v", r)
	}
	if _, err := s.InsertScheduleRun(ctx, store.ScheduleRun{Schedule: "old", ScheduledAt: at.Add(5 * time.Second), ReplicaID: "pod-b", Outcome: store.ScheduleOutcomeWonLock, Status: store.ScheduleRunning}); err != nil {
		t.Fatal(err)
	}
	sums, err := s.ScheduleSummaries(ctx)
	if err != nil || len(sums) != 1 || sums[0].Definition == nil || !sums[0].Definition.CatchUp || sums[0].Last == nil || sums[0].Last.ReplicaID != "pod-b" {
		t.Fatalf("summaries over old and new rows: %+v %v", sums, err)
	}
}
