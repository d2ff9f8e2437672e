package postgres

// Retention: a sweep batch is one statement, its deletes data-modifying
// CTEs of one snapshot, so a run goes with every row that belongs to it or
// not at all. Candidates are locked FOR UPDATE SKIP LOCKED: two sweepers
// at once take different rows, and a row a live writer holds is left for
// the next batch rather than waited for.

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// startKeySQL is dedupeKey(store.RunStartKey(id)) in SQL, for the id
// expression given: the start message's dedupe column, hashed as Enqueue
// hashes a long key.
func startKeySQL(id string) string {
	k := `('` + store.RunStartKey("") + `' || ` + id + `)`
	return `(CASE WHEN octet_length(` + k + `) > ` + strconv.Itoa(maxDedupeKey) +
		` THEN 'sha256:' || encode(sha256(convert_to(` + k + `, 'UTF8')), 'hex') ELSE ` + k + ` END)`
}

// runRows are the tables holding a run's rows, by the column naming it.
var runRows = []struct{ table, col string }{
	{store.TableExecutions, "id"},
	{store.TableJournal, "execution_id"},
	{store.TableSignals, "execution_id"},
	{store.TableStartContexts, `"executionId"`},
	{store.TableRuns, `"executionId"`},
	{store.TableRunSteps, `"executionId"`},
	{store.TableRunEvents, `"executionId"`},
}

// sweepRunsSQL selects the candidate runs as x ($1 cut-off, $2 dead-letter
// cut-off or NULL, $3 limit; dry run: $4 the cursor, in id order, nothing
// locked) and deletes (dry run: counts) their rows. It returns the
// candidates' count, the last candidate's id, and one count per runRows
// table, then the start messages' and their replies'.
func sweepRunsSQL(dry bool) string {
	tail := `LIMIT $3 FOR UPDATE OF e SKIP LOCKED`
	if dry {
		tail = `AND e.id > $4 ORDER BY e.id LIMIT $3`
	}
	// The start message may go when processed or dead before $2 (it was
	// checked in x; checked again here in case a replay moved it since).
	startGone := `(t.state = 'processed' OR (t.state = 'dead' AND t.processed_at < $2))`
	var q strings.Builder
	q.WriteString(`WITH x AS (
		SELECT e.id, ` + startKeySQL("e.id") + ` AS k
		FROM voltro_workflow_executions e
		WHERE e.status IN ('completed', 'failed', 'cancelled') AND e.created_at < $1
			AND coalesce(e.finished_at, e.updated_at) < $1
			AND NOT EXISTS (SELECT 1 FROM voltro_workflow_executions p
				WHERE p.id = e.parent_id AND p.status IN ('running', 'suspended'))
			AND NOT EXISTS (SELECT 1 FROM voltro_messages m WHERE m.dedupe_key = ` + startKeySQL("e.id") + `
				AND (m.state IN ('pending', 'claimed') OR (m.state = 'dead' AND NOT coalesce(m.processed_at < $2, false))))
		` + tail + `
	)`)
	counts := []string{`(SELECT count(*) FROM x)`, `coalesce((SELECT max(id) FROM x), '')`}
	if dry {
		for _, r := range runRows {
			counts = append(counts, `(SELECT count(*) FROM `+r.table+` t WHERE t.`+r.col+` IN (SELECT id FROM x))`)
		}
		counts = append(counts,
			`(SELECT count(*) FROM voltro_messages t JOIN x ON t.dedupe_key = x.k WHERE `+startGone+`)`,
			`(SELECT count(*) FROM voltro_replies r JOIN voltro_messages t ON r.request_id = t.id JOIN x ON t.dedupe_key = x.k WHERE `+startGone+`)`)
	} else {
		for i, r := range runRows {
			name := "d" + strconv.Itoa(i)
			q.WriteString(`, ` + name + ` AS (DELETE FROM ` + r.table + ` t USING x WHERE t.` + r.col + ` = x.id RETURNING 1)`)
			counts = append(counts, `(SELECT count(*) FROM `+name+`)`)
		}
		q.WriteString(`, dm AS (DELETE FROM voltro_messages t USING x WHERE t.dedupe_key = x.k AND ` + startGone + ` RETURNING t.id)
		, dr AS (DELETE FROM voltro_replies t USING dm WHERE t.request_id = dm.id RETURNING 1)`)
		counts = append(counts, `(SELECT count(*) FROM dm)`, `(SELECT count(*) FROM dr)`)
	}
	q.WriteString(` SELECT ` + strings.Join(counts, ", "))
	return q.String()
}

var (
	sqlSweepRuns    = sweepRunsSQL(false)
	sqlSweepRunsDry = sweepRunsSQL(true)
)

// sqlSweepMessages takes messages in state $3 finished before $1, at most
// $2, oldest first, with their replies.
const sqlSweepMessages = `WITH x AS (
		SELECT id FROM voltro_messages WHERE state = $3 AND processed_at < $1
		ORDER BY processed_at LIMIT $2 FOR UPDATE SKIP LOCKED
	), dm AS (
		DELETE FROM voltro_messages t USING x WHERE t.id = x.id RETURNING t.id
	), dr AS (
		DELETE FROM voltro_replies t USING dm WHERE t.request_id = dm.id RETURNING 1
	)
	SELECT (SELECT count(*) FROM x), '', (SELECT count(*) FROM dm), (SELECT count(*) FROM dr)`

// sqlSweepMessagesDry counts them in id order after $4.
const sqlSweepMessagesDry = `WITH x AS (
		SELECT id FROM voltro_messages WHERE state = $3 AND processed_at < $1 AND id > $4
		ORDER BY id LIMIT $2
	)
	SELECT (SELECT count(*) FROM x), coalesce((SELECT max(id) FROM x)::text, ''), (SELECT count(*) FROM x),
		(SELECT count(*) FROM voltro_replies r WHERE r.request_id IN (SELECT id FROM x))`

// sweepRunnersSQL: runner rows silent since before $1 that no lock row
// names, at most $2 (dry run: in address order after $3).
func sweepRunnersSQL(dry bool) string {
	tail := `ORDER BY address LIMIT $2 FOR UPDATE SKIP LOCKED`
	if dry {
		tail = `AND r.address > $3 ORDER BY address LIMIT $2`
	}
	q := `WITH x AS (
		SELECT address FROM voltro_runners r
		WHERE r.last_heartbeat < $1 AND NOT EXISTS (SELECT 1 FROM voltro_shard_locks l WHERE l.owner = r.address)
		` + tail + `
	)`
	if dry {
		return q + ` SELECT (SELECT count(*) FROM x), coalesce((SELECT max(address) FROM x), ''), (SELECT count(*) FROM x)`
	}
	return q + `, d AS (DELETE FROM voltro_runners t USING x WHERE t.address = x.address RETURNING 1)
	SELECT (SELECT count(*) FROM x), '', (SELECT count(*) FROM d)`
}

var (
	sqlSweepRunners    = sweepRunnersSQL(false)
	sqlSweepRunnersDry = sweepRunnersSQL(true)
)

func (s *Store) Sweep(ctx context.Context, req store.SweepRequest) (store.SweepBatch, error) {
	if req.Before.IsZero() {
		return store.SweepBatch{}, nil
	}
	limit := req.BatchLimit()
	var (
		q      string
		args   []any
		tables []string
	)
	switch req.Kind {
	case store.SweepRuns:
		var dead *time.Time
		if !req.DeadBefore.IsZero() {
			dead = &req.DeadBefore
		}
		q, args = sqlSweepRuns, []any{req.Before, dead, limit}
		if req.DryRun {
			q, args = sqlSweepRunsDry, append(args, req.After)
		}
		for _, r := range runRows {
			tables = append(tables, r.table)
		}
		tables = append(tables, store.TableMessages, store.TableReplies)
	case store.SweepProcessed, store.SweepDead:
		state := store.StateProcessed
		if req.Kind == store.SweepDead {
			state = store.StateDead
		}
		q, args = sqlSweepMessages, []any{req.Before, limit, string(state)}
		if req.DryRun {
			after := int64(0)
			if req.After != "" {
				n, err := strconv.ParseInt(req.After, 10, 64)
				if err != nil {
					return store.SweepBatch{}, errs.New(errs.CodeInvalidArgument, "sweep cursor %q is not a message id", req.After)
				}
				after = n
			}
			q, args = sqlSweepMessagesDry, append(args, after)
		}
		tables = []string{store.TableMessages, store.TableReplies}
	case store.SweepRunners:
		q, args = sqlSweepRunners, []any{req.Before, limit}
		if req.DryRun {
			q, args = sqlSweepRunnersDry, append(args, req.After)
		}
		tables = []string{store.TableRunners}
	default:
		return store.SweepBatch{}, errs.New(errs.CodeInvalidArgument, "unknown sweep kind %q", req.Kind)
	}
	var selected int64
	var next string
	counts := make([]int64, len(tables))
	dest := []any{&selected, &next}
	for i := range counts {
		dest = append(dest, &counts[i])
	}
	if err := s.pool.QueryRow(ctx, q, args...).Scan(dest...); err != nil {
		return store.SweepBatch{}, wrapErr("sweep "+string(req.Kind), err)
	}
	b := store.SweepBatch{More: selected >= int64(limit)}
	if req.DryRun {
		b.Next = next
	}
	for i, t := range tables {
		b.Add(t, counts[i])
	}
	return b, nil
}

// sqlOldestKept reads the ends of the status and finished-message indexes.
const sqlOldestKept = `SELECT now(),
	(SELECT min(c) FROM (
		(SELECT created_at c FROM voltro_workflow_executions WHERE status = 'completed' ORDER BY created_at LIMIT 1)
		UNION ALL (SELECT created_at FROM voltro_workflow_executions WHERE status = 'failed' ORDER BY created_at LIMIT 1)
		UNION ALL (SELECT created_at FROM voltro_workflow_executions WHERE status = 'cancelled' ORDER BY created_at LIMIT 1)
	) o),
	(SELECT min(processed_at) FROM voltro_messages WHERE state = 'processed'),
	(SELECT min(processed_at) FROM voltro_messages WHERE state = 'dead')`

func (s *Store) OldestKept(ctx context.Context) (store.Oldest, error) {
	var o store.Oldest
	var run, proc, dead *time.Time
	if err := s.pool.QueryRow(ctx, sqlOldestKept).Scan(&o.Now, &run, &proc, &dead); err != nil {
		return o, wrapErr("oldest kept", err)
	}
	for _, p := range []struct {
		dst *time.Time
		src *time.Time
	}{{&o.Run, run}, {&o.Processed, proc}, {&o.Dead, dead}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	return o, nil
}
