-- Core cluster tables of the SQLite store. Times are INTEGER unix
-- microseconds taken from the store's clock (see clock.go); 0 means "unset".

-- The one cluster-wide configuration row.
CREATE TABLE voltro_cluster_config (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    shard_count INTEGER NOT NULL,
    groups      TEXT    NOT NULL,          -- JSON array of group names
    created_at  INTEGER NOT NULL
);

-- Registered runners, one per advertised address.
CREATE TABLE voltro_runners (
    address        TEXT    PRIMARY KEY,
    replica_id     TEXT    NOT NULL DEFAULT '',
    groups         TEXT    NOT NULL DEFAULT '[]',   -- JSON array
    entity_types   TEXT    NOT NULL DEFAULT '[]',   -- JSON array
    inspect_addr   TEXT    NOT NULL DEFAULT '',
    version        TEXT    NOT NULL DEFAULT '',
    healthy        INTEGER NOT NULL DEFAULT 0,
    meta           TEXT    NOT NULL DEFAULT '',
    started_at     INTEGER NOT NULL,
    last_heartbeat INTEGER NOT NULL
);

-- The shard lock ledger: row leases and their epochs (fencing tokens).
-- owner = '' when released; expires_at = 0 when no lease is running.
CREATE TABLE voltro_shard_locks (
    shard       TEXT    PRIMARY KEY,
    owner       TEXT    NOT NULL DEFAULT '',
    epoch       INTEGER NOT NULL,
    acquired_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Persisted messages to entities.
CREATE TABLE voltro_messages (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    shard            TEXT    NOT NULL,
    entity_type      TEXT    NOT NULL,
    entity_id        TEXT    NOT NULL,
    tag              TEXT    NOT NULL DEFAULT '',
    payload          BLOB,
    headers          TEXT,                          -- JSON object, NULL when none
    dedupe_key       TEXT    UNIQUE,                -- NULL when none
    reply_to         TEXT    NOT NULL DEFAULT '',
    deliver_at       INTEGER NOT NULL,
    state            TEXT    NOT NULL DEFAULT 'pending'
                     CHECK (state IN ('pending', 'claimed', 'processed', 'dead')),
    claimed_by       TEXT    NOT NULL DEFAULT '',
    claim_epoch      INTEGER NOT NULL DEFAULT 0,
    claim_expires_at INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT    NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    processed_at     INTEGER NOT NULL DEFAULT 0
);

-- Open (pending or claimed) messages in insertion order: the claim scan.
CREATE INDEX voltro_messages_open ON voltro_messages (id, shard, entity_type, deliver_at)
    WHERE state IN ('pending', 'claimed');
-- Listings by state (dead letters), drain statistics, claim extension.
CREATE INDEX voltro_messages_state ON voltro_messages (state, id);
-- Listings by entity.
CREATE INDEX voltro_messages_entity ON voltro_messages (entity_type, entity_id, id);
-- The earliest future delivery.
CREATE INDEX voltro_messages_due ON voltro_messages (deliver_at) WHERE state = 'pending';

-- Final replies, at most one per request.
CREATE TABLE voltro_replies (
    request_id INTEGER PRIMARY KEY REFERENCES voltro_messages (id) ON DELETE CASCADE,
    payload    BLOB,
    error      BLOB,
    created_at INTEGER NOT NULL
);
