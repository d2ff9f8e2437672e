-- Schedules (internal/schedule, store.ScheduleStore): one claim row per tick
-- under advisoryLock coordination, one run row per tick per replica, and
-- each schedule as last registered. Quoted camelCase columns, read by
-- humans and by `voltro schedules`. Times are UTC text
-- 'YYYY-MM-DD HH:MM:SS.mmm', which sorts; the store writes them from its
-- clock (see schedules.go).
--
-- Versions before this migration created these tables at run time, with
-- exactly this DDL: IF NOT EXISTS leaves such a database as it is.

CREATE TABLE IF NOT EXISTS "_voltro_schedule_claims" (
	"claimKey" TEXT PRIMARY KEY,
	"schedule" TEXT NOT NULL,
	"scheduledAt" TEXT NOT NULL,
	"replicaId" TEXT NOT NULL,
	"claimedAt" TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS "_voltro_schedule_claims_claimedAt" ON "_voltro_schedule_claims" ("claimedAt");

CREATE TABLE IF NOT EXISTS "_voltro_schedule_runs" (
	"id" INTEGER PRIMARY KEY AUTOINCREMENT,
	"schedule" TEXT NOT NULL,
	"scheduledAt" TEXT NOT NULL,
	"replicaId" TEXT NOT NULL,
	"coordinationOutcome" TEXT NOT NULL,
	"status" TEXT NOT NULL,
	"started" TEXT,
	"finished" TEXT,
	"error" TEXT,
	"heartbeatAt" TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS "_voltro_schedule_runs_tick" ON "_voltro_schedule_runs" ("schedule", "scheduledAt");
CREATE INDEX IF NOT EXISTS "_voltro_schedule_runs_status" ON "_voltro_schedule_runs" ("status", "replicaId");

CREATE TABLE IF NOT EXISTS "_voltro_schedules" (
	"name" TEXT PRIMARY KEY,
	"spec" TEXT NOT NULL,
	"timeZone" TEXT NOT NULL,
	"coordination" TEXT NOT NULL,
	"overlap" TEXT NOT NULL,
	"catchUp" INTEGER NOT NULL,
	"replicaId" TEXT NOT NULL,
	"updatedAt" TEXT NOT NULL);
