-- Every fenced write bumps fence_writes of its shard's ledger row in its own
-- transaction. The write itself is the point, not the count: it puts the
-- lease row in the transaction's write-set, so Galera certifies the write
-- against a takeover made on any node (one of the two aborts), and it holds
-- the row's exclusive lock until the commit, so a takeover on the same
-- server waits for the write or finds it gone.
ALTER TABLE voltro_shard_locks ADD COLUMN fence_writes BIGINT UNSIGNED NOT NULL DEFAULT 0;
