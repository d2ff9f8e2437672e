-- Queues (store.Queues): a run started on a queue is stored 'queued' with its
-- place (queue, partition_key, priority, start_at), and gets dequeued_at
-- when a Dequeue gives it a slot. A run not started on a queue has NULL in
-- every one of these columns but priority (0): the partial indexes below
-- skip it, so an unqueued start writes exactly the index entries it wrote
-- before this migration. Nullable columns and a constant default are added
-- without rewriting the table (PostgreSQL 11+).
ALTER TABLE voltro_workflow_executions
    ADD COLUMN IF NOT EXISTS queue         text,
    ADD COLUMN IF NOT EXISTS partition_key text,
    ADD COLUMN IF NOT EXISTS priority      integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS start_at      timestamptz,
    ADD COLUMN IF NOT EXISTS dequeued_at   timestamptz;

-- 'queued' joins the statuses. The new check only widens the old one, which
-- every stored row passed, so it is added NOT VALID: no scan of the table
-- under its exclusive lock (new and updated rows are checked all the same).
ALTER TABLE voltro_workflow_executions DROP CONSTRAINT IF EXISTS voltro_workflow_executions_status_check;
ALTER TABLE voltro_workflow_executions ADD CONSTRAINT voltro_workflow_executions_status_check
    CHECK (status IN ('queued', 'running', 'suspended', 'completed', 'failed', 'cancelled')) NOT VALID;

-- A queue's runs by status. Dequeue reads the queued heads in
-- (partition_key, priority, created_at, id) order, the order its
-- round-robin ranks them in, so the ranking needs no sort of the backlog;
-- the slot counts (running, suspended) and QueueStats read ranges of it too.
CREATE INDEX IF NOT EXISTS voltro_workflow_executions_queue
    ON voltro_workflow_executions (queue, status, partition_key, priority, created_at, id)
    WHERE queue IS NOT NULL;
-- The rate window: a queue's dequeues since a moment.
CREATE INDEX IF NOT EXISTS voltro_workflow_executions_dequeued
    ON voltro_workflow_executions (queue, dequeued_at)
    WHERE dequeued_at IS NOT NULL;

-- One row per queue, its limits as last put (0: no limit). Dequeue locks
-- the row (SELECT … FOR UPDATE): that serializes the dequeues of a queue
-- across every instance. rate_period_ms is RatePeriod in milliseconds.
CREATE TABLE IF NOT EXISTS _voltro_queues (
    name                  text    PRIMARY KEY,
    concurrency           integer NOT NULL DEFAULT 0,
    worker_concurrency    integer NOT NULL DEFAULT 0,
    partition_concurrency integer NOT NULL DEFAULT 0,
    rate_limit            integer NOT NULL DEFAULT 0,
    rate_period_ms        bigint  NOT NULL DEFAULT 0
);
