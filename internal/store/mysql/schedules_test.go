package mysql_test

import (
	"maps"
	"regexp"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
)

// oldScheduleDDL is what versions before migration 0400 ran at run time
// (internal/schedule's Init), identifiers quoted as it quoted them.
var oldScheduleDDL = []string{
	"CREATE TABLE IF NOT EXISTS `_voltro_schedule_claims` (" + `
		` + "`claimKey` VARCHAR(255) NOT NULL PRIMARY KEY," + `
		` + "`schedule` VARCHAR(200) NOT NULL," + `
		` + "`scheduledAt` DATETIME(3) NOT NULL," + `
		` + "`replicaId` VARCHAR(255) NOT NULL," + `
		` + "`claimedAt` DATETIME(3) NOT NULL," + `
		KEY ` + "`_voltro_schedule_claims_claimedAt` (`claimedAt`)" + `
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	"CREATE TABLE IF NOT EXISTS `_voltro_schedule_runs` (" + `
		` + "`id` BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY," + `
		` + "`schedule` VARCHAR(200) NOT NULL," + `
		` + "`scheduledAt` DATETIME(3) NOT NULL," + `
		` + "`replicaId` VARCHAR(255) NOT NULL," + `
		` + "`coordinationOutcome` VARCHAR(32) NOT NULL," + `
		` + "`status` VARCHAR(16) NOT NULL," + `
		` + "`started` DATETIME(3) NULL," + `
		` + "`finished` DATETIME(3) NULL," + `
		` + "`error` TEXT NULL," + `
		` + "`heartbeatAt` DATETIME(3) NOT NULL," + `
		KEY ` + "`_voltro_schedule_runs_tick` (`schedule`, `scheduledAt`)," + `
		KEY ` + "`_voltro_schedule_runs_status` (`status`, `replicaId`)" + `
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	"CREATE TABLE IF NOT EXISTS `_voltro_schedules` (" + `
		` + "`name` VARCHAR(200) NOT NULL PRIMARY KEY," + `
		` + "`spec` TEXT NOT NULL," + `
		` + "`timeZone` VARCHAR(64) NOT NULL," + `
		` + "`coordination` VARCHAR(32) NOT NULL," + `
		` + "`overlap` VARCHAR(16) NOT NULL," + `
		` + "`catchUp` BOOLEAN NOT NULL," + `
		` + "`replicaId` VARCHAR(255) NOT NULL," + `
		` + "`updatedAt` DATETIME(3) NOT NULL" + `
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
}

var autoIncrement = regexp.MustCompile(` AUTO_INCREMENT=[0-9]+`)

// TestSchedulesUpgrade: a database whose schedule tables an older version
// created at run time, with rows in them (times written as that version
// wrote them), migrates to 0400 with the tables unchanged, and the store
// reads and extends what the old code wrote.
func TestSchedulesUpgrade(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.MariaDB(t, "myschedup")
	s := open(t, url, quiet)
	db := s.DB()
	for _, q := range oldScheduleDDL {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		"INSERT INTO `_voltro_schedule_claims` VALUES ('old@1777629607', 'old', '2026-05-01 10:00:07.000', 'pod-a', UTC_TIMESTAMP(3))",
		"INSERT INTO `_voltro_schedule_runs` (`schedule`, `scheduledAt`, `replicaId`, `coordinationOutcome`, `status`, `started`, `finished`, `error`, `heartbeatAt`)" +
			" VALUES ('old', '2026-05-01 10:00:07.000', 'pod-a', 'wonLock', 'failed', UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), 'boom', UTC_TIMESTAMP(3))",
		"INSERT INTO `_voltro_schedules` VALUES ('old', '@every 5s', 'UTC', 'advisoryLock', 'skip', 1, 'pod-a', UTC_TIMESTAMP(3))",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	shape := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, table := range []string{"_voltro_schedule_claims", "_voltro_schedule_runs", "_voltro_schedules"} {
			var name, ddl string
			if err := db.QueryRowContext(ctx, "SHOW CREATE TABLE `"+table+"`").Scan(&name, &ddl); err != nil {
				t.Fatal(err)
			}
			out[table] = autoIncrement.ReplaceAllString(ddl, "") // the counter is data, not shape
		}
		return out
	}
	before := shape()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate over the old tables: %v", err)
	}
	if after := shape(); !maps.Equal(before, after) {
		t.Fatalf("migration changed the old tables:\nbefore %v\nafter  %v", before, after)
	}
	// A fresh database gets the very same tables from the migration.
	fresh, _ := fresh(t, "myschedup_new", quiet)
	db = fresh.DB()
	if got := shape(); !maps.Equal(before, got) {
		t.Fatalf("migration 0400 differs from the old run-time DDL:\nold %v\nnew %v", before, got)
	}
	checkUpgraded(t, s, time.Date(2026, 5, 1, 10, 0, 7, 0, time.UTC))
}

// checkUpgraded reads the old rows through the store and writes beside them.
func checkUpgraded(t *testing.T, s store.Schedules, at time.Time) {
	t.Helper()
	ctx := ctxT(t)
	if won, err := s.ClaimScheduleTick(ctx, store.ScheduleClaim{Schedule: "old", ScheduledAt: at, ReplicaID: "pod-b"}); err != nil || won {
		t.Fatalf("the old claim must still hold its tick: %v %v", won, err)
	}
	runs, err := s.ScheduleRuns(ctx, "old", 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("old runs: %+v %v", runs, err)
	}
	r := runs[0]
	if !r.ScheduledAt.Equal(at) || r.Status != store.ScheduleFailed || r.Error != "boom" || r.Outcome != store.ScheduleOutcomeWonLock || r.Started.IsZero() || r.Finished.IsZero() {
		t.Fatalf("old run: %+v", r)
	}
	id, err := s.InsertScheduleRun(ctx, store.ScheduleRun{Schedule: "old", ScheduledAt: at.Add(5 * time.Second), ReplicaID: "pod-b", Outcome: store.ScheduleOutcomeWonLock, Status: store.ScheduleRunning})
	if err != nil || id <= r.ID {
		t.Fatalf("new run after the old one: id %d (old %d) %v", id, r.ID, err)
	}
	sums, err := s.ScheduleSummaries(ctx)
	if err != nil || len(sums) != 1 || sums[0].Definition == nil || sums[0].Definition.Spec != "@every 5s" || !sums[0].Definition.CatchUp || sums[0].Last == nil || sums[0].Last.ID != id {
		t.Fatalf("summaries over old and new rows: %+v %v", sums, err)
	}
}
