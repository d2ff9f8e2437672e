-- The commit-rate probe's table (store.CommitProber, voltro bench): the
-- database's own single-row commit rate is measured by inserting here.
-- Versions before this migration created it at run time, on the first
-- probe, with exactly this DDL: IF NOT EXISTS leaves such a table as it is.
CREATE TABLE IF NOT EXISTS voltro_bench_commit (id BIGSERIAL PRIMARY KEY, v INT NOT NULL);
