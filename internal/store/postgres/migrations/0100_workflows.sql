-- Workflow tables: runs, their journals and signals (read by the engine),
-- and the _voltro_ introspection tables (read by humans, so their columns are
-- quoted camelCase). Idempotent: safe on a schema that already has them.

-- One row per run. error holds errs.Encode of the failure; parent_id is ''
-- for a root run. A start and every status change (not HOT: status is
-- indexed) write the primary key and the listing indexes below.
CREATE TABLE IF NOT EXISTS voltro_workflow_executions (
    id               text        PRIMARY KEY,
    name             text        NOT NULL,
    shard            text        NOT NULL,
    idem_key         text        NOT NULL DEFAULT '',
    status           text        NOT NULL DEFAULT 'running'
                     CHECK (status IN ('running', 'suspended', 'completed', 'failed', 'cancelled')),
    input            bytea,
    output           bytea,
    error            bytea,
    parent_id        text        NOT NULL DEFAULT '',
    parent_close     text        NOT NULL DEFAULT '',
    cancel_requested boolean     NOT NULL DEFAULT false,
    waiting_on       text        NOT NULL DEFAULT '',
    runner           text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
);

-- Listings, newest first: all runs, by status, by name, and the children of
-- a run (root runs stay out of that one).
CREATE INDEX IF NOT EXISTS voltro_workflow_executions_created
    ON voltro_workflow_executions (created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS voltro_workflow_executions_status
    ON voltro_workflow_executions (status, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS voltro_workflow_executions_name
    ON voltro_workflow_executions (name, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS voltro_workflow_executions_parent
    ON voltro_workflow_executions (parent_id, created_at DESC, id DESC)
    WHERE parent_id <> '';

-- One row per finished operation of a run, written once.
CREATE TABLE IF NOT EXISTS voltro_workflow_journal (
    execution_id text        NOT NULL,
    seq          integer     NOT NULL,
    kind         text        NOT NULL,
    name         text        NOT NULL DEFAULT '',
    result       bytea,
    error        bytea,
    attempts     integer     NOT NULL DEFAULT 0,
    runner       text        NOT NULL DEFAULT '',
    started_at   timestamptz,
    finished_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (execution_id, seq)
);

-- Signals: the first of a name wins.
CREATE TABLE IF NOT EXISTS voltro_workflow_signals (
    execution_id text        NOT NULL,
    name         text        NOT NULL,
    payload      bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (execution_id, name)
);

-- The context a run starts with, written with its execution row.
CREATE TABLE IF NOT EXISTS _voltro_workflow_start_contexts (
    "executionId" text        PRIMARY KEY,
    subject       text        NOT NULL DEFAULT '',
    trace         text        NOT NULL DEFAULT '',
    source        text        NOT NULL DEFAULT '',
    "parentId"    text        NOT NULL DEFAULT '',
    "parentClose" text        NOT NULL DEFAULT '',
    "createdAt"   timestamptz NOT NULL DEFAULT now()
);

-- Introspection: one row per run, upserted in the background as it moves;
-- never read for correctness.
CREATE TABLE IF NOT EXISTS _voltro_workflow_runs (
    "executionId" text        PRIMARY KEY,
    name          text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT '',
    "replicaId"   text        NOT NULL DEFAULT '',
    runner        text        NOT NULL DEFAULT '',
    "parentId"    text        NOT NULL DEFAULT '',
    error         text        NOT NULL DEFAULT '',
    "startedAt"   timestamptz,
    "updatedAt"   timestamptz NOT NULL DEFAULT now(),
    "finishedAt"  timestamptz
);
-- What moved lately.
CREATE INDEX IF NOT EXISTS _voltro_workflow_runs_updated
    ON _voltro_workflow_runs ("updatedAt");

-- Introspection: one row per attempt of a step.
CREATE TABLE IF NOT EXISTS _voltro_workflow_run_steps (
    "executionId" text        NOT NULL,
    seq           integer     NOT NULL,
    attempt       integer     NOT NULL,
    name          text        NOT NULL DEFAULT '',
    kind          text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT '',
    runner        text        NOT NULL DEFAULT '',
    "replicaId"   text        NOT NULL DEFAULT '',
    error         text        NOT NULL DEFAULT '',
    "startedAt"   timestamptz,
    "finishedAt"  timestamptz,
    trace         text        NOT NULL DEFAULT '',
    PRIMARY KEY ("executionId", seq, attempt)
);

-- Introspection: what happened to a run, in time order.
CREATE TABLE IF NOT EXISTS _voltro_workflow_run_events (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    "executionId" text        NOT NULL,
    at            timestamptz NOT NULL DEFAULT now(),
    kind          text        NOT NULL,
    detail        text        NOT NULL DEFAULT '',
    "replicaId"   text        NOT NULL DEFAULT '',
    runner        text        NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS _voltro_workflow_run_events_execution
    ON _voltro_workflow_run_events ("executionId", at, id);
