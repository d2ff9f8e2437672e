package postgres

// SeedHistory: finished runs in bulk, for `voltro bench workflows --retained`.

import (
	"context"
	"fmt"

	"github.com/voltro/voltro/internal/store"
)

var _ store.HistorySeeder = (*Store)(nil)

// seedBatch runs per statement: one statement writes every table of its
// runs, so a batch commits whole.
const seedBatch = 20000

// sqlSeed makes runs $1 … $1+$2-1 of $3, started at evenly spread times in
// [$4, $5), of workflow $6 on shards $7 (round robin), ending in status $8. A run takes 40 ms,
// its steps start 10 ms apart.
const sqlSeed = `WITH s AS MATERIALIZED (
		SELECT i, c, c + interval '40 milliseconds' AS f,
			'wf_' || lpad(to_hex(floor(extract(epoch FROM c) * 1000)::bigint), 12, '0') || substr(md5(i || '/' || random()), 1, 12) AS id,
			($7::text[])[1 + (i % cardinality($7::text[]))] AS shard
		FROM (SELECT i, $4::timestamptz + ($5::timestamptz - $4::timestamptz) * (i::float8 / $3) AS c
			FROM generate_series($1::bigint, $1 + $2 - 1) i) g
	), e AS (
		INSERT INTO voltro_workflow_executions (id, name, shard, status, input, output, runner, created_at, updated_at, finished_at)
		SELECT id, $6, shard, $8, convert_to(i::text, 'UTF8'), convert_to((i + 3)::text, 'UTF8'), 'seed', c, f, f FROM s
	), j AS (
		INSERT INTO voltro_workflow_journal (execution_id, seq, kind, name, result, attempts, runner, started_at, finished_at)
		SELECT id, k, 'step', 'add' || k, convert_to((i + k + 1)::text, 'UTF8'), 1, 'seed', c + k * interval '10 ms', c + k * interval '10 ms'
		FROM s, generate_series(0, 2) k
	), sc AS (
		INSERT INTO _voltro_workflow_start_contexts ("executionId", source, "createdAt") SELECT id, 'api', c FROM s
	), r AS (
		INSERT INTO _voltro_workflow_runs ("executionId", name, status, "replicaId", runner, "startedAt", "updatedAt", "finishedAt")
		SELECT id, $6, $8, 'seed', 'seed', c, f, f FROM s
	), st AS (
		INSERT INTO _voltro_workflow_run_steps ("executionId", seq, attempt, name, kind, status, runner, "replicaId", "startedAt", "finishedAt")
		SELECT id, k, 1, 'add' || k, 'step', 'completed', 'seed', 'seed', c + k * interval '10 ms', c + k * interval '10 ms'
		FROM s, generate_series(0, 2) k
	), ev AS (
		INSERT INTO _voltro_workflow_run_events ("executionId", at, kind, "replicaId", runner)
		SELECT id, CASE WHEN k = 0 THEN c ELSE f END, CASE WHEN k = 0 THEN 'started' ELSE 'completed' END, 'seed', 'seed'
		FROM s, generate_series(0, 1) k
	), m AS (
		INSERT INTO voltro_messages (shard, entity_type, entity_id, tag, dedupe_key, deliver_at, state, claimed_by, claim_epoch, attempts, created_at, processed_at)
		SELECT shard, 'workflow/' || $6, id, 'start', 'wf-start:' || id, c, 'processed', 'seed', 1, 1, c, f FROM s
		RETURNING id, processed_at
	)
	INSERT INTO voltro_replies (request_id, created_at) SELECT id, processed_at FROM m`

// SeedHistory implements store.HistorySeeder.
func (s *Store) SeedHistory(ctx context.Context, h store.HistorySeed) error {
	if h.N <= 0 || len(h.Shards) == 0 || h.Name == "" || !h.From.Before(h.To) {
		return fmt.Errorf("seed history: need N > 0, a name, shards and From before To")
	}
	for i := 0; i < h.N; i += seedBatch {
		n := min(seedBatch, h.N-i)
		if _, err := s.pool.Exec(ctx, sqlSeed, i, n, h.N, h.From, h.To, h.Name, h.Shards, string(h.FinalStatus())); err != nil {
			return fmt.Errorf("seed history: runs %d-%d of %d: %w", i, i+n-1, h.N, err)
		}
	}
	return nil
}
