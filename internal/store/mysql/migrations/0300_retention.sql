-- Retention: the sweep takes processed messages and dead letters oldest
-- first, and reports the oldest it keeps. The key is processed_at alone:
-- it changes once per message (NULL until the update that finishes it), so
-- claims and releases on the hot path never move it. Created only if
-- missing (MySQL has no CREATE INDEX IF NOT EXISTS), so the file can be run
-- again.
SET @voltro_ddl = (SELECT IF(COUNT(*) = 0,
        'CREATE INDEX idx_messages_processed ON voltro_messages (processed_at)', 'DO 0')
    FROM information_schema.statistics
    WHERE table_schema = DATABASE() AND table_name = 'voltro_messages' AND index_name = 'idx_messages_processed');
PREPARE voltro_stmt FROM @voltro_ddl;
EXECUTE voltro_stmt;
DEALLOCATE PREPARE voltro_stmt;
