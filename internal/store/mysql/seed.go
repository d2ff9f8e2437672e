package mysql

// SeedHistory: finished runs in bulk, for `voltro bench workflows --retained`.

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/voltro/voltro/internal/store"
)

var _ store.HistorySeeder = (*Store)(nil)

// seedBatch runs per transaction: a batch commits whole.
const seedBatch = 20000

// seedDigits counts 0 … 99999 without a sequence table (MySQL has none).
const seedDigits = `(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
	UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)`

// seedStatements fill the batch's temporary table (run n of the batch is
// run ? + n of the whole, started at ? plus its index times ? µs, on shard
// index (? + n) mod ?), then copy it into every table. A run takes 40 ms,
// its steps start 10 ms apart. The random part of an id hashes the run's
// number with RAND(): MariaDB's RAND() has only 2^30 values, so alone it
// repeats within a batch.
var seedStatements = []string{
	`CREATE TEMPORARY TABLE voltro_seed (n BIGINT NOT NULL PRIMARY KEY, c DATETIME(6) NOT NULL,
		f DATETIME(6) NOT NULL, id VARCHAR(191) NOT NULL, shard VARCHAR(191) NOT NULL) ENGINE=InnoDB`,
	`INSERT INTO voltro_seed (n, c, f, id, shard)
	SELECT x.n, x.c, x.c + INTERVAL 40000 MICROSECOND,
		CONCAT('wf_', LOWER(LPAD(HEX(FLOOR(UNIX_TIMESTAMP(x.c) * 1000)), 12, '0')), SUBSTR(MD5(CONCAT(x.n, '/', RAND())), 1, 12)), sh.shard
	FROM (SELECT @i + g.n AS n, @from + INTERVAL ((@i + g.n) * @step) MICROSECOND AS c
		FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * d.d + 10000 * e.d AS n
			FROM ` + seedDigits + ` a, ` + seedDigits + ` b, ` + seedDigits + ` c, ` + seedDigits + ` d, ` + seedDigits + ` e) g
		WHERE g.n < @batch) x
	JOIN voltro_seed_shards sh ON sh.k = x.n MOD @shards`,
	`INSERT INTO voltro_workflow_executions (id, name, shard, status, input, output, runner, created_at, updated_at, finished_at)
	SELECT id, @name, shard, @status, CAST(n AS CHAR), CAST(n + 3 AS CHAR), 'seed', c, f, f FROM voltro_seed`,
	`INSERT INTO voltro_workflow_journal (execution_id, seq, kind, name, result, attempts, runner, started_at, finished_at)
	SELECT s.id, k.k, 'step', CONCAT('add', k.k), CAST(s.n + k.k + 1 AS CHAR), 1, 'seed',
		s.c + INTERVAL (k.k * 10000) MICROSECOND, s.c + INTERVAL (k.k * 10000) MICROSECOND
	FROM voltro_seed s, (SELECT 0 k UNION ALL SELECT 1 UNION ALL SELECT 2) k`,
	"INSERT INTO `_voltro_workflow_start_contexts` (`executionId`, `source`, `createdAt`) SELECT id, 'api', c FROM voltro_seed",
	"INSERT INTO `_voltro_workflow_runs` (`executionId`, `name`, `status`, `replicaId`, `runner`, `startedAt`, `updatedAt`, `finishedAt`)" +
		" SELECT id, @name, @status, 'seed', 'seed', c, f, f FROM voltro_seed",
	"INSERT INTO `_voltro_workflow_run_steps` (`executionId`, `seq`, `attempt`, `name`, `kind`, `status`, `runner`, `replicaId`, `startedAt`, `finishedAt`)" +
		" SELECT s.id, k.k, 1, CONCAT('add', k.k), 'step', 'completed', 'seed', 'seed', s.c + INTERVAL (k.k * 10000) MICROSECOND, s.c + INTERVAL (k.k * 10000) MICROSECOND" +
		" FROM voltro_seed s, (SELECT 0 k UNION ALL SELECT 1 UNION ALL SELECT 2) k",
	"INSERT INTO `_voltro_workflow_run_events` (`executionId`, `at`, `kind`, `replicaId`, `runner`)" +
		" SELECT s.id, IF(k.k = 0, s.c, s.f), IF(k.k = 0, 'started', 'completed'), 'seed', 'seed' FROM voltro_seed s, (SELECT 0 k UNION ALL SELECT 1) k",
	`INSERT INTO voltro_messages (shard, entity_type, entity_id, tag, dedupe_key, deliver_at, state, claimed_by, claim_epoch, attempts, created_at, processed_at)
	SELECT shard, CONCAT('workflow/', @name), id, 'start', CONCAT('wf-start:', id), c, 'processed', 'seed', 1, 1, c, f FROM voltro_seed`,
	`INSERT INTO voltro_replies (request_id, created_at)
	SELECT m.id, m.processed_at FROM voltro_seed s JOIN voltro_messages m ON m.dedupe_key = CONCAT('wf-start:', s.id)`,
	`DROP TEMPORARY TABLE voltro_seed`,
}

// SeedHistory implements store.HistorySeeder. Session variables carry the
// batch's parameters so the statements stay fixed text.
func (s *Store) SeedHistory(ctx context.Context, h store.HistorySeed) error {
	if h.N <= 0 || len(h.Shards) == 0 || h.Name == "" || !h.From.Before(h.To) {
		return fmt.Errorf("seed history: need N > 0, a name, shards and From before To")
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("seed history: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE TEMPORARY TABLE voltro_seed_shards (k INT NOT NULL PRIMARY KEY, shard VARCHAR(191) NOT NULL)`); err != nil {
		return fmt.Errorf("seed history: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DROP TEMPORARY TABLE IF EXISTS voltro_seed_shards`) //nolint:errcheck
	for k, sh := range h.Shards {
		if _, err := conn.ExecContext(ctx, `INSERT INTO voltro_seed_shards (k, shard) VALUES (?, ?)`, k, sh); err != nil {
			return fmt.Errorf("seed history: %w", err)
		}
	}
	step := h.To.Sub(h.From).Microseconds() / int64(h.N)
	if _, err := conn.ExecContext(ctx, `SET @from = ?, @step = ?, @shards = ?, @name = ?, @status = ?`,
		h.From.UTC().Format("2006-01-02 15:04:05.999999"), step, len(h.Shards), h.Name, string(h.FinalStatus())); err != nil {
		return fmt.Errorf("seed history: %w", err)
	}
	for i := 0; i < h.N; i += seedBatch {
		n := min(seedBatch, h.N-i)
		if err := seedOne(ctx, conn, i, n); err != nil {
			return fmt.Errorf("seed history: runs %d-%d of %d: %w", i, i+n-1, h.N, err)
		}
	}
	return nil
}

func seedOne(ctx context.Context, conn *sql.Conn, i, n int) error {
	if _, err := conn.ExecContext(ctx, `SET @i = ?, @batch = ?`, i, n); err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, q := range seedStatements {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}
