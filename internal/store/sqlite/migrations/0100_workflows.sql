-- Durable workflows: executions, their journal and signals (engine tables,
-- snake_case columns), and the introspection tables the engine writes but
-- never reads for correctness (_voltro_*, quoted camelCase columns). Times
-- are INTEGER unix microseconds from the store's clock; 0 means "unset".
-- Every statement is idempotent, so the file can simply run again.

-- One row per run. error holds errs.Encode of the failure; parent_id is ''
-- for a root run. A rowid table: the rowid breaks ties of created_at in the
-- newest-first listings (every index ends in it implicitly).
CREATE TABLE IF NOT EXISTS voltro_workflow_executions (
    id               TEXT    NOT NULL PRIMARY KEY,
    name             TEXT    NOT NULL,
    shard            TEXT    NOT NULL,
    idem_key         TEXT    NOT NULL DEFAULT '',
    status           TEXT    NOT NULL DEFAULT 'running'
                     CHECK (status IN ('running', 'suspended', 'completed', 'failed', 'cancelled')),
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
    finished_at      INTEGER NOT NULL DEFAULT 0
);

-- Listings, newest first (an index scanned backwards, ties by rowid): all
-- runs, by status, by name, and the children of a run (root runs stay out of
-- that one).
CREATE INDEX IF NOT EXISTS voltro_workflow_executions_created
    ON voltro_workflow_executions (created_at);
CREATE INDEX IF NOT EXISTS voltro_workflow_executions_status
    ON voltro_workflow_executions (status, created_at);
CREATE INDEX IF NOT EXISTS voltro_workflow_executions_name
    ON voltro_workflow_executions (name, created_at);
CREATE INDEX IF NOT EXISTS voltro_workflow_executions_parent
    ON voltro_workflow_executions (parent_id, created_at)
    WHERE parent_id <> '';

-- One row per finished operation of a run, written once: the primary key
-- refuses a second write of a sequence number.
CREATE TABLE IF NOT EXISTS voltro_workflow_journal (
    execution_id TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    kind         TEXT    NOT NULL,
    name         TEXT    NOT NULL DEFAULT '',
    result       BLOB,
    error        BLOB,
    attempts     INTEGER NOT NULL DEFAULT 0,
    runner       TEXT    NOT NULL DEFAULT '',
    started_at   INTEGER NOT NULL DEFAULT 0,
    finished_at  INTEGER NOT NULL,
    PRIMARY KEY (execution_id, seq)
) WITHOUT ROWID;

-- Signals: the first one of a name wins.
CREATE TABLE IF NOT EXISTS voltro_workflow_signals (
    execution_id TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    payload      BLOB,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (execution_id, name)
) WITHOUT ROWID;

-- The context a run starts with (who, trace, source, parent), written with
-- its execution row.
CREATE TABLE IF NOT EXISTS "_voltro_workflow_start_contexts" (
    "executionId" TEXT    NOT NULL PRIMARY KEY,
    "subject"     TEXT    NOT NULL DEFAULT '',
    "trace"       TEXT    NOT NULL DEFAULT '',
    "source"      TEXT    NOT NULL DEFAULT '',
    "parentId"    TEXT    NOT NULL DEFAULT '',
    "parentClose" TEXT    NOT NULL DEFAULT '',
    "createdAt"   INTEGER NOT NULL
) WITHOUT ROWID;

-- Introspection: one row per run, upserted as it moves.
CREATE TABLE IF NOT EXISTS "_voltro_workflow_runs" (
    "executionId" TEXT    NOT NULL PRIMARY KEY,
    "name"        TEXT    NOT NULL DEFAULT '',
    "status"      TEXT    NOT NULL DEFAULT '',
    "replicaId"   TEXT    NOT NULL DEFAULT '',
    "runner"      TEXT    NOT NULL DEFAULT '',
    "parentId"    TEXT    NOT NULL DEFAULT '',
    "error"       TEXT    NOT NULL DEFAULT '',
    "startedAt"   INTEGER NOT NULL DEFAULT 0,
    "updatedAt"   INTEGER NOT NULL DEFAULT 0,
    "finishedAt"  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS "_voltro_workflow_runs_updated"
    ON "_voltro_workflow_runs" ("updatedAt");

-- Introspection: one row per attempt of a step.
CREATE TABLE IF NOT EXISTS "_voltro_workflow_run_steps" (
    "executionId" TEXT    NOT NULL,
    "seq"         INTEGER NOT NULL,
    "attempt"     INTEGER NOT NULL,
    "name"        TEXT    NOT NULL DEFAULT '',
    "kind"        TEXT    NOT NULL DEFAULT '',
    "status"      TEXT    NOT NULL DEFAULT '',
    "runner"      TEXT    NOT NULL DEFAULT '',
    "replicaId"   TEXT    NOT NULL DEFAULT '',
    "error"       TEXT    NOT NULL DEFAULT '',
    "startedAt"   INTEGER NOT NULL DEFAULT 0,
    "finishedAt"  INTEGER NOT NULL DEFAULT 0,
    "trace"       TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY ("executionId", "seq", "attempt")
) WITHOUT ROWID;

-- Introspection: what happened to a run, in time order.
CREATE TABLE IF NOT EXISTS "_voltro_workflow_run_events" (
    "id"          INTEGER PRIMARY KEY AUTOINCREMENT,
    "executionId" TEXT    NOT NULL,
    "at"          INTEGER NOT NULL,
    "kind"        TEXT    NOT NULL DEFAULT '',
    "detail"      TEXT    NOT NULL DEFAULT '',
    "replicaId"   TEXT    NOT NULL DEFAULT '',
    "runner"      TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS "_voltro_workflow_run_events_execution"
    ON "_voltro_workflow_run_events" ("executionId", "at", "id");
