-- Queues (store.Queues): a run started on a queue is stored 'queued' with
-- its queue, partition key, priority and earliest start, and Dequeue moves
-- it to 'running', stamping dequeued_at. Times are INTEGER unix
-- microseconds from the store's clock; 0 means "unset" (start_at 0: due at
-- once; dequeued_at 0: never given a slot). A run not started on a queue
-- has queue = '' and stays out of every index below.
--
-- The status CHECK of 0100 does not allow 'queued', and SQLite cannot alter
-- a constraint in place, so the table is rebuilt as the SQLite manual's
-- "other kinds of table schema changes" procedure does: create the new
-- table, copy every row with its rowid (rowids break ties of created_at in
-- the newest-first listings, so they must survive), drop the old table,
-- rename the new one, recreate the indexes. No view, trigger or foreign key
-- names this table. The migration runs in one BEGIN IMMEDIATE transaction
-- (migrate.go): a failure leaves the old table as it was.

CREATE TABLE voltro_workflow_executions_0800 (
    id               TEXT    NOT NULL PRIMARY KEY,
    name             TEXT    NOT NULL,
    shard            TEXT    NOT NULL,
    idem_key         TEXT    NOT NULL DEFAULT '',
    status           TEXT    NOT NULL DEFAULT 'running'
                     CHECK (status IN ('queued', 'running', 'suspended', 'completed', 'failed', 'cancelled')),
    input            BLOB,
    output           BLOB,
    error            BLOB,
    parent_id        TEXT    NOT NULL DEFAULT '',
    parent_close     TEXT    NOT NULL DEFAULT '',
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    waiting_on       TEXT    NOT NULL DEFAULT '',
    runner           TEXT    NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    finished_at      INTEGER NOT NULL DEFAULT 0,
    queue            TEXT    NOT NULL DEFAULT '',
    partition_key    TEXT    NOT NULL DEFAULT '',
    priority         INTEGER NOT NULL DEFAULT 0,
    start_at         INTEGER NOT NULL DEFAULT 0,
    dequeued_at      INTEGER NOT NULL DEFAULT 0
);

INSERT INTO voltro_workflow_executions_0800 (rowid, id, name, shard, idem_key, status, input, output, error,
        parent_id, parent_close, cancel_requested, waiting_on, runner, created_at, updated_at, finished_at)
    SELECT rowid, id, name, shard, idem_key, status, input, output, error,
        parent_id, parent_close, cancel_requested, waiting_on, runner, created_at, updated_at, finished_at
    FROM voltro_workflow_executions;

DROP TABLE voltro_workflow_executions;
ALTER TABLE voltro_workflow_executions_0800 RENAME TO voltro_workflow_executions;

-- The indexes of 0100, as they were.
CREATE INDEX voltro_workflow_executions_created
    ON voltro_workflow_executions (created_at);
CREATE INDEX voltro_workflow_executions_status
    ON voltro_workflow_executions (status, created_at);
CREATE INDEX voltro_workflow_executions_name
    ON voltro_workflow_executions (name, created_at);
CREATE INDEX voltro_workflow_executions_parent
    ON voltro_workflow_executions (parent_id, created_at)
    WHERE parent_id <> '';

-- A queue's runs by status: the queued heads of Dequeue (its window ranks
-- runs per partition by priority, created_at, id, read here in that order),
-- the slots held (running, suspended) and QueueStats. start_at rides along
-- so that eligibility is decided in the index. Partial: an unqueued run
-- (queue = '') is never written to it, so its start and every later status
-- change cost what they cost before. Queries must say queue <> '' for the
-- planner to use it.
CREATE INDEX voltro_workflow_executions_queue
    ON voltro_workflow_executions (queue, status, partition_key, priority, created_at, id, start_at)
    WHERE queue <> '';
-- The rate window of a queue: its runs dequeued after a time.
CREATE INDEX voltro_workflow_executions_dequeued
    ON voltro_workflow_executions (queue, dequeued_at)
    WHERE queue <> '';

-- Each queue's limits as last stored (PutQueue), shared by the fleet. A
-- zero limit is no limit. Dequeue needs no counter or lock column here:
-- its write transaction holds SQLite's one write lock, which serializes it
-- against every other Dequeue of any process on the file.
CREATE TABLE "_voltro_queues" (
    name                  TEXT    NOT NULL PRIMARY KEY,
    concurrency           INTEGER NOT NULL DEFAULT 0,
    worker_concurrency    INTEGER NOT NULL DEFAULT 0,
    partition_concurrency INTEGER NOT NULL DEFAULT 0,
    rate_limit            INTEGER NOT NULL DEFAULT 0,
    rate_period_ms        INTEGER NOT NULL DEFAULT 0,
    updated_at            INTEGER NOT NULL
) WITHOUT ROWID;
