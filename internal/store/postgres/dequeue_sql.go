package postgres

// Dequeue's statements. Every one of them reads the queue's runs through
// the partial indexes of migration 0800, never the whole executions table.

import "strconv"

// sqlLockQueue reads queue $1's limits and locks its row until the commit:
// a second Dequeue of the queue waits here, then reads what this one wrote.
const sqlLockQueue = `SELECT ` + queueCols + ` FROM _voltro_queues WHERE name = $1 FOR UPDATE`

// queueSlotsSQL counts queue $1's runs holding a slot per partition and,
// byOwner, per holder of the run's shard (” none), each group a row,
// next to the queue's dequeues since now - $2 ms ($2 = 0: not counted).
// With no run holding a slot it gives one row of NULL groups.
func queueSlotsSQL(byOwner bool) string {
	owner, join := `''`, ``
	if byOwner {
		owner, join = `coalesce(l.owner, '')`, ` LEFT JOIN voltro_shard_locks l ON l.shard = e.shard`
	}
	return `WITH a AS (
		SELECT e.partition_key AS p, ` + owner + ` AS o, count(*) AS n
		FROM voltro_workflow_executions e` + join + `
		WHERE e.queue = $1 AND e.status IN ('running', 'suspended') AND e.dequeued_at IS NOT NULL
		GROUP BY 1, 2
	), r AS (
		SELECT CASE WHEN $2::bigint > 0 THEN (SELECT count(*) FROM voltro_workflow_executions
			WHERE queue = $1 AND dequeued_at > now() - $2::bigint * interval '1 millisecond') ELSE 0 END AS n
	)
	SELECT r.n, a.p, a.o, a.n FROM r LEFT JOIN a ON true`
}

// headsWalkMax is the most queued partitions a dequeue walks one by one
// (headsWalk); a queue with more is ranked whole (headsRank).
const headsWalkMax = 500

// Both ways of ranking a queue's eligible queued runs give c: each run
// with its rank in its partition (partition_key, by priority, created_at,
// id), the runs of the partitions with $4/$5 (keys, slots held) at
// PartitionConcurrency $2 left out, and, without a worker limit ($3), the
// runs past their partition's free slots too.
//
// headsRank ranks every eligible run of the queue with a window over the
// queue index: its cost grows with the backlog. headsWalk skips from one
// queued partition to the next in the queue index (one descent each, as
// parts) and reads each one's first eligible runs in index order, at most
// $6 (a run ranked past $6 in its partition has $6 runs before it in
// dequeue order, and is not in the first $6): its cost grows with the
// partitions, not the backlog. It gives up past headsWalkMax partitions
// (many.over), before reading any run.
const headsRank = `c AS (
		SELECT w.* FROM (
			SELECT e.id, e.name, e.shard, e.partition_key, e.priority, e.created_at,
				row_number() OVER (PARTITION BY e.partition_key ORDER BY e.priority, e.created_at, e.id) AS rank
			FROM voltro_workflow_executions e
			WHERE e.queue = $1 AND e.status = 'queued' AND (e.start_at IS NULL OR e.start_at <= now())
		) w
		LEFT JOIN unnest($4::text[], $5::bigint[]) AS pa(p, n) ON pa.p = w.partition_key
		WHERE $2::int <= 0 OR (coalesce(pa.n, 0) < $2 AND ($3::int > 0 OR w.rank <= $2 - coalesce(pa.n, 0)))
	)`

var headsWalk = `RECURSIVE parts(p, n) AS (
		(SELECT partition_key, 1 FROM voltro_workflow_executions
			WHERE queue = $1 AND status = 'queued' ORDER BY partition_key LIMIT 1)
		UNION ALL
		SELECT (SELECT partition_key FROM voltro_workflow_executions
				WHERE queue = $1 AND status = 'queued' AND partition_key > parts.p ORDER BY partition_key LIMIT 1),
			parts.n + 1
		FROM parts WHERE parts.p IS NOT NULL AND parts.n <= ` + strconv.Itoa(headsWalkMax) + `
	), many AS (
		SELECT count(p) > ` + strconv.Itoa(headsWalkMax) + ` AS over FROM parts
	), c AS (
		SELECT h.id, h.name, h.shard, h.partition_key, h.priority, h.created_at,
			row_number() OVER (PARTITION BY h.partition_key ORDER BY h.priority, h.created_at, h.id) AS rank
		FROM parts
		LEFT JOIN unnest($4::text[], $5::bigint[]) AS pa(p, n) ON pa.p = parts.p
		CROSS JOIN LATERAL (
			SELECT e.id, e.name, e.shard, e.partition_key, e.priority, e.created_at
			FROM voltro_workflow_executions e
			WHERE e.queue = $1 AND e.status = 'queued' AND e.partition_key = parts.p
				AND (e.start_at IS NULL OR e.start_at <= now())
			ORDER BY e.priority, e.created_at, e.id
			LIMIT CASE WHEN $2::int > 0 AND $3::int <= 0 THEN least(greatest($2 - coalesce(pa.n, 0), 0), $6::bigint) ELSE $6::bigint END
		) h
		WHERE parts.p IS NOT NULL AND NOT (SELECT over FROM many)
			AND ($2::int <= 0 OR coalesce(pa.n, 0) < $2)
	)`

// queueHeadsSQL picks queue $1's eligible queued runs in dequeue order
// from c (walk: headsWalk, else headsRank): priority, then rank
// (partitions take turns), then creation, at most $6 (NULL: all), by a
// top-$6 sort. byOwner, it passes over the runs whose shard's holder has
// $7/$8 (holders, slots held) at WorkerConcurrency $3; the holders a
// dequeue fills up itself are for the caller to skip. Without a worker
// limit, every row is taken.
//
// Walking, a row of NULLs says the queue has too many partitions to walk.
func queueHeadsSQL(walk, byOwner bool) string {
	c := headsRank
	if walk {
		c = headsWalk
	}
	owner, join := `''`, ``
	if byOwner {
		owner = `coalesce(l.owner, '')`
		join = `
		LEFT JOIN voltro_shard_locks l ON l.shard = c.shard
		LEFT JOIN unnest($7::text[], $8::bigint[]) AS oa(o, n) ON oa.o = coalesce(l.owner, '')
		WHERE coalesce(oa.n, 0) < $3`
	}
	q := `WITH ` + c + `
	(SELECT c.id, c.name, c.shard, c.partition_key, ` + owner + `
		FROM c` + join + `
		ORDER BY c.priority, c.rank, c.created_at, c.id
		LIMIT $6)`
	if walk {
		q += `
	UNION ALL
	SELECT NULL, NULL, NULL, NULL, NULL FROM many WHERE over`
	}
	return q
}

var (
	sqlQueueSlots        = queueSlotsSQL(false)
	sqlQueueSlotsByOwner = queueSlotsSQL(true)
	sqlHeadsRank         = queueHeadsSQL(false, false)
	sqlHeadsRankByOwner  = queueHeadsSQL(false, true)
	sqlHeadsWalk         = queueHeadsSQL(true, false)
	sqlHeadsWalkByOwner  = queueHeadsSQL(true, true)
)

// headsSQL is queueHeadsSQL(walk, byOwner), built once.
func headsSQL(walk, byOwner bool) string {
	switch {
	case walk && byOwner:
		return sqlHeadsWalkByOwner
	case walk:
		return sqlHeadsWalk
	case byOwner:
		return sqlHeadsRankByOwner
	}
	return sqlHeadsRank
}

// sqlDequeueRun moves run $15 from queued to running and only then
// enqueues its start message ($1-$14, enqueueArgs), which wakes the shard's
// holder at the commit as any enqueue does. A run cancelled since the
// heads were read is left as it is, and gets no message.
var sqlDequeueRun = `WITH u AS (
		UPDATE voltro_workflow_executions SET status = 'running', dequeued_at = now(), updated_at = now()
		WHERE id = $15 AND status = 'queued'
		RETURNING id
	), ` + enqueueCTEs("u") + `
	SELECT EXISTS (SELECT 1 FROM u), ` + enqueueResultCols + `
	FROM ` + enqueueResultFrom("u")
