-- Queues (store.Queues): a run started on a queue is stored 'queued' with
-- its queue, partition key, priority and earliest start; Dequeue moves it
-- to 'running' with dequeued_at set, and its slot is held while the run is
-- running or suspended. A run not started on a queue has queue NULL and
-- the defaults, written by the same INSERT as before: no trigger, no
-- statement more.
--
-- MySQL has neither ADD COLUMN IF NOT EXISTS nor CREATE INDEX IF NOT
-- EXISTS: each DDL runs only if what it creates is missing, so the file can
-- be run again. The columns come in one ALTER (instant on MariaDB 10.3+ and
-- MySQL 8, the columns being nullable or defaulted and appended); the
-- indexes each in a statement of their own, built online.
SET @voltro_ddl = (SELECT IF(COUNT(*) = 0,
        'ALTER TABLE voltro_workflow_executions
            ADD COLUMN queue         VARCHAR(191) NULL,
            ADD COLUMN partition_key VARCHAR(191) NOT NULL DEFAULT '''',
            ADD COLUMN priority      INT          NOT NULL DEFAULT 0,
            ADD COLUMN start_at      DATETIME(6)  NULL,
            ADD COLUMN dequeued_at   DATETIME(6)  NULL', 'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = 'voltro_workflow_executions' AND column_name = 'queue');
PREPARE voltro_stmt FROM @voltro_ddl;
EXECUTE voltro_stmt;
DEALLOCATE PREPARE voltro_stmt;

-- A queue's runs by status: Dequeue's heads (status 'queued', ranked per
-- partition by priority, created_at, id), the slots held (running or
-- suspended with dequeued_at set, counted per partition) and QueueStats, all
-- read from the index alone. Runs not on a queue sit under NULL, out of
-- every range these read; their status changes rewrite their entries here
-- as they do in idx_wf_exec_status.
SET @voltro_ddl = (SELECT IF(COUNT(*) = 0,
        'CREATE INDEX idx_wf_exec_queue ON voltro_workflow_executions
            (queue, status, partition_key, priority, created_at, start_at, dequeued_at)', 'DO 0')
    FROM information_schema.statistics
    WHERE table_schema = DATABASE() AND table_name = 'voltro_workflow_executions' AND index_name = 'idx_wf_exec_queue');
PREPARE voltro_stmt FROM @voltro_ddl;
EXECUTE voltro_stmt;
DEALLOCATE PREPARE voltro_stmt;

-- A queue's dequeues by time: the rate limit's window. Set once per run,
-- never for a run not on a queue, so no run write but Dequeue's moves it.
SET @voltro_ddl = (SELECT IF(COUNT(*) = 0,
        'CREATE INDEX idx_wf_exec_dequeued ON voltro_workflow_executions (queue, dequeued_at)', 'DO 0')
    FROM information_schema.statistics
    WHERE table_schema = DATABASE() AND table_name = 'voltro_workflow_executions' AND index_name = 'idx_wf_exec_dequeued');
PREPARE voltro_stmt FROM @voltro_ddl;
EXECUTE voltro_stmt;
DEALLOCATE PREPARE voltro_stmt;

-- Each queue's limits, shared by the fleet (PutQueue). The row is also
-- what serializes Dequeue: every dequeue locks it (SELECT … FOR UPDATE) and
-- one that hands out slots writes it (dequeues + n), so that on Galera two
-- nodes' concurrent dequeues conflict at certification and one re-runs.
-- A zero limit is no limit.
CREATE TABLE IF NOT EXISTS _voltro_queues (
    name                  VARCHAR(191) NOT NULL PRIMARY KEY,
    concurrency           INT          NOT NULL DEFAULT 0,
    worker_concurrency    INT          NOT NULL DEFAULT 0,
    partition_concurrency INT          NOT NULL DEFAULT 0,
    rate_limit            INT          NOT NULL DEFAULT 0,
    rate_period_ms        BIGINT       NOT NULL DEFAULT 0,
    dequeues              BIGINT       NOT NULL DEFAULT 0,
    updated_at            DATETIME(6)  NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
