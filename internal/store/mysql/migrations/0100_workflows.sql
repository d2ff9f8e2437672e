-- Durable workflows: executions, their journal and signals (engine tables,
-- snake_case), and the introspection tables the engine writes but never reads
-- for correctness (_voltro_*, camelCase columns). Every statement is
-- idempotent (IF NOT EXISTS) so the file can simply run again.

-- One row per run. status is running | suspended | completed | failed |
-- cancelled. The listing indexes end in created_at: newest first by status,
-- by name, by parent, or over all runs.
CREATE TABLE IF NOT EXISTS voltro_workflow_executions (
    id               VARCHAR(191)  NOT NULL PRIMARY KEY,
    name             VARCHAR(191)  NOT NULL,
    shard            VARCHAR(191)  NOT NULL,
    idem_key         VARCHAR(1024) NOT NULL DEFAULT '',
    status           VARCHAR(16)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    input            LONGBLOB      NULL,
    output           LONGBLOB      NULL,
    error            LONGBLOB      NULL,
    parent_id        VARCHAR(191)  NOT NULL DEFAULT '',
    parent_close     VARCHAR(32)   NOT NULL DEFAULT '',
    cancel_requested TINYINT(1)    NOT NULL DEFAULT 0,
    waiting_on       VARCHAR(1024) NOT NULL DEFAULT '',
    runner           VARCHAR(255)  NOT NULL DEFAULT '',
    created_at       DATETIME(6)   NOT NULL,
    updated_at       DATETIME(6)   NOT NULL,
    finished_at      DATETIME(6)   NULL,
    KEY idx_wf_exec_created (created_at),
    KEY idx_wf_exec_status (status, created_at),
    KEY idx_wf_exec_name (name, created_at),
    KEY idx_wf_exec_parent (parent_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per finished operation of a run, written once (the primary key
-- refuses a second write of a sequence number).
CREATE TABLE IF NOT EXISTS voltro_workflow_journal (
    execution_id VARCHAR(191) NOT NULL,
    seq          INT          NOT NULL,
    kind         VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    name         VARCHAR(255) NOT NULL DEFAULT '',
    result       LONGBLOB     NULL,
    error        LONGBLOB     NULL,
    attempts     INT          NOT NULL DEFAULT 0,
    runner       VARCHAR(255) NOT NULL DEFAULT '',
    started_at   DATETIME(6)  NULL,
    finished_at  DATETIME(6)  NOT NULL,
    PRIMARY KEY (execution_id, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Signals: the first one of a name wins.
CREATE TABLE IF NOT EXISTS voltro_workflow_signals (
    execution_id VARCHAR(191) NOT NULL,
    name         VARCHAR(191) NOT NULL,
    payload      LONGBLOB     NULL,
    created_at   DATETIME(6)  NOT NULL,
    PRIMARY KEY (execution_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The context a run starts with (who, trace, source, parent).
CREATE TABLE IF NOT EXISTS `_voltro_workflow_start_contexts` (
    `executionId` VARCHAR(191)  NOT NULL PRIMARY KEY,
    `subject`     VARCHAR(1024) NOT NULL DEFAULT '',
    `trace`       VARCHAR(255)  NOT NULL DEFAULT '',
    `source`      VARCHAR(255)  NOT NULL DEFAULT '',
    `parentId`    VARCHAR(191)  NOT NULL DEFAULT '',
    `parentClose` VARCHAR(32)   NOT NULL DEFAULT '',
    `createdAt`   DATETIME(6)   NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Introspection: one row per run, upserted as it moves.
CREATE TABLE IF NOT EXISTS `_voltro_workflow_runs` (
    `executionId` VARCHAR(191) NOT NULL PRIMARY KEY,
    `name`        VARCHAR(191) NOT NULL DEFAULT '',
    `status`      VARCHAR(16)  NOT NULL DEFAULT '',
    `replicaId`   VARCHAR(255) NOT NULL DEFAULT '',
    `runner`      VARCHAR(255) NOT NULL DEFAULT '',
    `parentId`    VARCHAR(191) NOT NULL DEFAULT '',
    `error`       MEDIUMTEXT   NULL,
    `startedAt`   DATETIME(6)  NULL,
    `updatedAt`   DATETIME(6)  NULL,
    `finishedAt`  DATETIME(6)  NULL,
    KEY `idx_wf_runs_updated` (`updatedAt`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Introspection: one row per attempt of a step.
CREATE TABLE IF NOT EXISTS `_voltro_workflow_run_steps` (
    `executionId` VARCHAR(191) NOT NULL,
    `seq`         INT          NOT NULL,
    `attempt`     INT          NOT NULL,
    `name`        VARCHAR(255) NOT NULL DEFAULT '',
    `kind`        VARCHAR(16)  NOT NULL DEFAULT '',
    `status`      VARCHAR(16)  NOT NULL DEFAULT '',
    `runner`      VARCHAR(255) NOT NULL DEFAULT '',
    `replicaId`   VARCHAR(255) NOT NULL DEFAULT '',
    `error`       MEDIUMTEXT   NULL,
    `startedAt`   DATETIME(6)  NULL,
    `finishedAt`  DATETIME(6)  NULL,
    `trace`       VARCHAR(255) NOT NULL DEFAULT '',
    PRIMARY KEY (`executionId`, `seq`, `attempt`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Introspection: what happened to a run, in time order.
CREATE TABLE IF NOT EXISTS `_voltro_workflow_run_events` (
    `id`          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    `executionId` VARCHAR(191) NOT NULL,
    `at`          DATETIME(6)  NOT NULL,
    `kind`        VARCHAR(64)  NOT NULL DEFAULT '',
    `detail`      MEDIUMTEXT   NULL,
    `replicaId`   VARCHAR(255) NOT NULL DEFAULT '',
    `runner`      VARCHAR(255) NOT NULL DEFAULT '',
    KEY `idx_wf_events_exec` (`executionId`, `at`, `id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
