-- Core cluster tables: config, runners, the shard lock ledger, messages and
-- their final replies. All times come from the database clock.

CREATE TABLE voltro_cluster_config (
    id          smallint    PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    shard_count integer     NOT NULL,
    groups      text[]      NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE voltro_runners (
    address        text        PRIMARY KEY,
    replica_id     text        NOT NULL DEFAULT '',
    groups         text[]      NOT NULL DEFAULT '{}',
    entity_types   text[]      NOT NULL DEFAULT '{}',
    inspect_addr   text        NOT NULL DEFAULT '',
    version        text        NOT NULL DEFAULT '',
    healthy        boolean     NOT NULL DEFAULT false,
    meta           text        NOT NULL DEFAULT '',
    started_at     timestamptz NOT NULL DEFAULT now(),
    last_heartbeat timestamptz NOT NULL DEFAULT now()
);

-- One row per shard ever acquired. owner = '' when released; epoch grows by
-- one on every acquisition; expires_at is NULL in advisory mode.
CREATE TABLE voltro_shard_locks (
    shard       text        PRIMARY KEY,
    owner       text        NOT NULL DEFAULT '',
    epoch       bigint      NOT NULL DEFAULT 0,
    acquired_at timestamptz,
    expires_at  timestamptz
);

-- id is the insertion order. dedupe_key holds the caller's key, or a hash of
-- it when the key is long.
CREATE TABLE voltro_messages (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    shard            text        NOT NULL,
    entity_type      text        NOT NULL,
    entity_id        text        NOT NULL,
    tag              text        NOT NULL DEFAULT '',
    payload          bytea,
    headers          jsonb,
    dedupe_key       text,
    reply_to         text        NOT NULL DEFAULT '',
    deliver_at       timestamptz NOT NULL DEFAULT now(),
    state            text        NOT NULL DEFAULT 'pending'
                     CHECK (state IN ('pending', 'claimed', 'processed', 'dead')),
    claimed_by       text        NOT NULL DEFAULT '',
    claim_epoch      bigint      NOT NULL DEFAULT 0,
    claim_expires_at timestamptz,
    attempts         integer     NOT NULL DEFAULT 0,
    last_error       text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    processed_at     timestamptz
);

-- Every index here is maintained by each insert and by each state change
-- (state sits in the partial predicates, so no update is HOT): the hot path
-- pays for the primary key and one partial index only.

-- Claim, ExtendClaims and DrainStats: the undelivered messages of a shard in
-- id order.
CREATE INDEX voltro_messages_undelivered ON voltro_messages (shard, id)
    WHERE state IN ('pending', 'claimed');
-- NextDelivery: the earliest future deliver_at.
CREATE INDEX voltro_messages_due ON voltro_messages (deliver_at)
    WHERE state = 'pending';
-- Deduplication: only messages that carry a key are indexed.
CREATE UNIQUE INDEX voltro_messages_dedupe ON voltro_messages (dedupe_key)
    WHERE dedupe_key IS NOT NULL;
-- Dead-letter listings and counts.
CREATE INDEX voltro_messages_dead ON voltro_messages (shard)
    WHERE state = 'dead';

CREATE TABLE voltro_replies (
    request_id bigint      PRIMARY KEY,
    payload    bytea,
    error      bytea,
    created_at timestamptz NOT NULL DEFAULT now()
);
