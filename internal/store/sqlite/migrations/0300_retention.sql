-- Retention: the sweep takes processed messages and dead letters oldest
-- first, and reports the oldest it keeps. Only finished messages are in
-- this index: pending and claimed rows (the hot path) never touch it.
CREATE INDEX IF NOT EXISTS voltro_messages_finished ON voltro_messages (state, processed_at)
    WHERE state IN ('processed', 'dead');
