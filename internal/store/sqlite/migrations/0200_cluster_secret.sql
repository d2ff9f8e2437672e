-- The runner-RPC secret generated when VOLTRO_CLUSTER_SECRET is not set.
CREATE TABLE voltro_cluster_secret (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    secret     TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
