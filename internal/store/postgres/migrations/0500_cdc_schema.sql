-- The change feed's trigger versions (internal/cdc/pgnotify): which version
-- of the keys-only notify trigger function is installed.
--
-- Versions before this migration created the table at run time, when the
-- first subscription installed a trigger, with exactly this DDL under the
-- transaction advisory lock taken first here: IF NOT EXISTS leaves such a
-- database as it is, and a process of such a version installing a trigger
-- at this moment waits for this transaction instead of racing it. A feed
-- opened without the engine's migrations (package changes) applies this
-- file on its own.
SELECT pg_advisory_xact_lock(hashtext('voltro_cdc_ddl'));

CREATE TABLE IF NOT EXISTS _voltro_cdc_schema (component text PRIMARY KEY, version int NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
