-- The binlog change feed's resume positions (internal/cdc, store.BinlogOffsets):
-- one GTID position per replica id.
--
-- Versions before this migration created the table at run time, when a
-- feed started on MariaDB, with exactly this DDL (the server's default
-- engine and collation included): IF NOT EXISTS leaves such a database as
-- it is. One statement: a feed opened without the engine's migrations
-- (package changes) applies this file on its own.

CREATE TABLE IF NOT EXISTS _voltro_cdc_offsets (
	replica_id VARCHAR(191) NOT NULL PRIMARY KEY,
	server_id INT UNSIGNED NOT NULL,
	gtid VARCHAR(2048) NOT NULL,
	schema_version INT NOT NULL DEFAULT 1,
	updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
)
