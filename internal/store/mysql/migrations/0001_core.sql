-- Core tables of the cluster runtime. Every statement is idempotent
-- (IF NOT EXISTS) so a migration interrupted half way, or run on two Galera
-- nodes at once, converges when it runs again.

CREATE TABLE IF NOT EXISTS voltro_cluster_config (
    id          TINYINT      NOT NULL PRIMARY KEY,
    shard_count INT          NOT NULL,
    groups_json TEXT         NOT NULL,
    created_at  DATETIME(6)  NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS voltro_runners (
    address           VARCHAR(255) NOT NULL PRIMARY KEY,
    replica_id        VARCHAR(255) NOT NULL DEFAULT '',
    groups_json       TEXT         NOT NULL,
    entity_types_json TEXT         NOT NULL,
    inspect_addr      VARCHAR(255) NOT NULL DEFAULT '',
    version           VARCHAR(255) NOT NULL DEFAULT '',
    healthy           TINYINT(1)   NOT NULL DEFAULT 1,
    meta              MEDIUMTEXT   NULL,
    started_at        DATETIME(6)  NOT NULL,
    last_heartbeat    DATETIME(6)  NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The epoch ledger: one row per shard ever acquired. owner = '' when free.
-- Row mode leases it until expires_at; advisory mode leaves expires_at NULL.
CREATE TABLE IF NOT EXISTS voltro_shard_locks (
    shard       VARCHAR(191) NOT NULL PRIMARY KEY,
    owner       VARCHAR(255) NOT NULL DEFAULT '',
    epoch       BIGINT       NOT NULL DEFAULT 0,
    acquired_at DATETIME(6)  NULL,
    expires_at  DATETIME(6)  NULL,
    KEY idx_shard_locks_owner (owner)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Messages. id is the insertion order. dedupe_key holds the caller's key, or
-- 'sha256:<hex>' of it when it is long (dedupe_full then keeps the original).
-- idx_messages_claim serves Claim and NextDelivery (shard, state, due time);
-- idx_messages_state serves DrainStats, ExtendClaims and listings by state,
-- and keeps processed rows out of every scan that looks for work.
CREATE TABLE IF NOT EXISTS voltro_messages (
    id               BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    shard            VARCHAR(191) NOT NULL,
    entity_type      VARCHAR(191) NOT NULL,
    entity_id        VARCHAR(255) NOT NULL,
    tag              VARCHAR(255) NOT NULL DEFAULT '',
    payload          LONGBLOB     NULL,
    headers          MEDIUMTEXT   NULL,
    dedupe_key       VARBINARY(191) NULL,
    dedupe_full      MEDIUMTEXT   NULL,
    reply_to         VARCHAR(255) NOT NULL DEFAULT '',
    deliver_at       DATETIME(6)  NOT NULL,
    state            VARCHAR(10)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'pending',
    claimed_by       VARCHAR(255) NOT NULL DEFAULT '',
    claim_epoch      BIGINT       NOT NULL DEFAULT 0,
    claim_expires_at DATETIME(6)  NULL,
    attempts         INT          NOT NULL DEFAULT 0,
    last_error       MEDIUMTEXT   NULL,
    created_at       DATETIME(6)  NOT NULL,
    processed_at     DATETIME(6)  NULL,
    UNIQUE KEY uq_messages_dedupe (dedupe_key),
    KEY idx_messages_claim (shard, state, deliver_at),
    KEY idx_messages_state (state, claimed_by)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- At most one final reply per request.
CREATE TABLE IF NOT EXISTS voltro_replies (
    request_id BIGINT      NOT NULL PRIMARY KEY,
    payload    LONGBLOB    NULL,
    error      MEDIUMBLOB  NULL,
    created_at DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
