-- Schedules (internal/schedule, store.ScheduleStore): one claim row per tick
-- under advisoryLock coordination, one run row per tick per replica, and
-- each schedule as last registered. camelCase columns, read by humans and by
-- `voltro schedules`. Times are UTC DATETIME(3) from the server's clock.
--
-- Versions before this migration created these tables at run time, with
-- exactly this DDL (the server's default collation included): IF NOT
-- EXISTS leaves such a database as it is. Indexes are inline: MySQL has no
-- CREATE INDEX IF NOT EXISTS.

CREATE TABLE IF NOT EXISTS `_voltro_schedule_claims` (
	`claimKey` VARCHAR(255) NOT NULL PRIMARY KEY,
	`schedule` VARCHAR(200) NOT NULL,
	`scheduledAt` DATETIME(3) NOT NULL,
	`replicaId` VARCHAR(255) NOT NULL,
	`claimedAt` DATETIME(3) NOT NULL,
	KEY `_voltro_schedule_claims_claimedAt` (`claimedAt`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `_voltro_schedule_runs` (
	`id` BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	`schedule` VARCHAR(200) NOT NULL,
	`scheduledAt` DATETIME(3) NOT NULL,
	`replicaId` VARCHAR(255) NOT NULL,
	`coordinationOutcome` VARCHAR(32) NOT NULL,
	`status` VARCHAR(16) NOT NULL,
	`started` DATETIME(3) NULL,
	`finished` DATETIME(3) NULL,
	`error` TEXT NULL,
	`heartbeatAt` DATETIME(3) NOT NULL,
	KEY `_voltro_schedule_runs_tick` (`schedule`, `scheduledAt`),
	KEY `_voltro_schedule_runs_status` (`status`, `replicaId`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `_voltro_schedules` (
	`name` VARCHAR(200) NOT NULL PRIMARY KEY,
	`spec` TEXT NOT NULL,
	`timeZone` VARCHAR(64) NOT NULL,
	`coordination` VARCHAR(32) NOT NULL,
	`overlap` VARCHAR(16) NOT NULL,
	`catchUp` BOOLEAN NOT NULL,
	`replicaId` VARCHAR(255) NOT NULL,
	`updatedAt` DATETIME(3) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
