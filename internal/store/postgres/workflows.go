// Workflow runs: executions with their start contexts, journals and signals.
// Every call is one statement, and one round trip: the writes that enqueue
// a message (start, signal, cancel) carry the message insert as CTEs of the
// same statement, and the fenced writes join the shard lock ledger.

package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// enqueueCTEs is sqlEnqueue's message insert (d, c, ins, n) for statements
// that enqueue only when their own write happened: d selects FROM gate, so
// when gate is empty nothing is inserted, claimed or notified. It takes
// sqlEnqueue's parameters $1-$14 in the same order (enqueueArgs) and must be
// kept in step with it; the statement's own parameters start at $15.
//
// sqlEnqueue itself cannot be reused: a data-modifying WITH is only allowed
// at the top level, and running it as a second statement of the transaction
// would cost a round trip (or an error to abort it).
func enqueueCTEs(gate string) string {
	return `d AS (
		SELECT coalesce($9::timestamptz, now() + $10::bigint * interval '1 microsecond') AS at FROM ` + gate + `
	), c AS (
		SELECT l.epoch FROM voltro_shard_locks l, d
		WHERE $11::text <> '' AND l.shard = $1 AND l.owner = $11 AND l.epoch = $12 AND d.at <= now()
	), ins AS (
		INSERT INTO voltro_messages (shard, entity_type, entity_id, tag, payload, headers, dedupe_key, reply_to,
			deliver_at, state, claimed_by, claim_epoch, claim_expires_at, attempts, created_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, d.at,
			CASE WHEN c.epoch IS NULL THEN 'pending' ELSE 'claimed' END,
			CASE WHEN c.epoch IS NULL THEN '' ELSE $11 END,
			coalesce(c.epoch, 0),
			CASE WHEN c.epoch IS NULL THEN NULL ELSE now() + $13::bigint * interval '1 microsecond' END,
			CASE WHEN c.epoch IS NULL THEN 0 ELSE 1 END,
			now()
		FROM d LEFT JOIN c ON true
		ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
		RETURNING id, deliver_at, state, created_at, claim_epoch
	), n AS (
		SELECT pg_notify($14, 'm ' || ins.id || ' ' || $1) FROM ins WHERE ins.state = 'pending' AND NOT ` + senderOwns + `
	)`
}

// enqueueResultCols are the columns enqueueScan reads, from the FROM clause
// of enqueueResultFrom: the inserted message, or the earlier one holding the
// dedupe key (as far as the statement's snapshot shows it).
const enqueueResultCols = `i.id, i.deliver_at, i.state, i.created_at, i.claim_epoch, (SELECT count(*) FROM n),
	dm.id, dm.payload, dm.error, dm.created_at`

func enqueueResultFrom(gate string) string {
	return `(SELECT 1) one
	LEFT JOIN ins i ON true
	LEFT JOIN LATERAL (
		SELECT m.id, r.payload, r.error, r.created_at
		FROM voltro_messages m LEFT JOIN voltro_replies r ON r.request_id = m.id
		WHERE m.dedupe_key = $7 AND i.id IS NULL AND EXISTS (SELECT 1 FROM ` + gate + `)
	) dm ON true`
}

// enqueueArgs builds sqlEnqueue's parameters $1-$14 for m as Enqueue does,
// followed by extra ($15 on).
func (s *Store) enqueueArgs(m *store.Message, claim *store.EnqueueClaim, extra ...any) ([]any, *string, error) {
	if m == nil {
		return nil, nil, errs.New(errs.CodeInvalidArgument, "no message to enqueue")
	}
	var headers []byte
	if len(m.Headers) > 0 {
		b, err := json.Marshal(m.Headers)
		if err != nil {
			return nil, nil, errs.Wrap(errs.CodeInvalidArgument, err, "message headers")
		}
		headers = b
	}
	var deliverAt *time.Time
	if !m.DeliverAt.IsZero() {
		deliverAt = &m.DeliverAt
	}
	var claimOwner string
	var claimEpoch, claimTTL int64
	if claim != nil {
		claimOwner, claimEpoch, claimTTL = claim.Owner, claim.Epoch, micros(claim.ClaimTTL)
	}
	key := dedupeKey(m.DedupeKey)
	args := append(make([]any, 0, 14+len(extra)),
		m.Shard, m.EntityType, m.EntityID, m.Tag, m.Payload, headers, key, m.ReplyTo,
		deliverAt, micros(m.Delay), claimOwner, claimEpoch, claimTTL, s.channel)
	return append(args, extra...), key, nil
}

// enqueueScan receives enqueueResultCols.
type enqueueScan struct {
	id, epoch, dupID      *int64
	at, created, rCreated *time.Time
	state                 *string
	notified              int64
	rPayload, rErr        []byte
}

func (e *enqueueScan) dest() []any {
	return []any{&e.id, &e.at, &e.state, &e.created, &e.epoch, &e.notified, &e.dupID, &e.rPayload, &e.rErr, &e.rCreated}
}

// result is Enqueue's result for a message the statement enqueued (its gate
// was not empty). A duplicate committed while the insert waited on it is
// read again in a fresh snapshot, as Enqueue does.
func (s *Store) result(ctx context.Context, op string, m *store.Message, key *string, e *enqueueScan) (store.EnqueueResult, error) {
	if e.id != nil {
		m.ID, m.State = *e.id, store.MessageState(*e.state)
		if e.at != nil {
			m.DeliverAt = *e.at
		}
		if e.created != nil {
			m.CreatedAt = *e.created
		}
		return store.EnqueueResult{ID: *e.id, ClaimedEpoch: *e.epoch}, nil
	}
	if key == nil {
		return store.EnqueueResult{}, errs.New(errs.CodeInternal, "postgres %s: message was neither inserted nor a duplicate", op)
	}
	res := store.EnqueueResult{Duplicate: true}
	if e.dupID != nil {
		res.ID = *e.dupID
	} else if err := s.pool.QueryRow(ctx, sqlDuplicate, *key).Scan(&res.ID, &e.rPayload, &e.rErr, &e.rCreated); err != nil {
		return store.EnqueueResult{}, wrapErr(op, err)
	}
	if e.rCreated != nil {
		res.Reply = &store.Reply{RequestID: res.ID, Payload: e.rPayload, Error: e.rErr, CreatedAt: *e.rCreated}
	}
	return res, nil
}

// execCols is the column list execScan reads, from the executions row
// aliased e (coalesced: StartExecution reads it through an outer join; the
// queue columns are NULL for a run not started on a queue).
const execCols = `coalesce(e.id, ''), coalesce(e.name, ''), coalesce(e.shard, ''), coalesce(e.idem_key, ''),
	coalesce(e.status, ''), e.input, e.output, e.error, coalesce(e.parent_id, ''), coalesce(e.parent_close, ''),
	coalesce(e.cancel_requested, false), coalesce(e.waiting_on, ''), coalesce(e.runner, ''),
	coalesce(e.queue, ''), coalesce(e.partition_key, ''), coalesce(e.priority, 0), e.start_at, e.dequeued_at,
	e.created_at, e.updated_at, e.finished_at`

type execScan struct {
	x                                             store.Execution
	status                                        string
	startAt, dequeued, created, updated, finished *time.Time
}

func (e *execScan) dest() []any {
	x := &e.x
	return []any{&x.ID, &x.Name, &x.Shard, &x.Key, &e.status, &x.Input, &x.Output, &x.Error, &x.ParentID, &x.ParentClose,
		&x.CancelRequested, &x.WaitingOn, &x.Runner, &x.Queue, &x.Partition, &x.Priority, &e.startAt, &e.dequeued,
		&e.created, &e.updated, &e.finished}
}

func (e *execScan) execution() store.Execution {
	x := e.x
	x.Status = store.ExecStatus(e.status)
	x.StartAt, x.DequeuedAt = timeOf(e.startAt), timeOf(e.dequeued)
	x.CreatedAt, x.UpdatedAt, x.FinishedAt = timeOf(e.created), timeOf(e.updated), timeOf(e.finished)
	return x
}

func scanExecution(row pgx.CollectableRow) (store.Execution, error) {
	var e execScan
	if err := row.Scan(e.dest()...); err != nil {
		return store.Execution{}, err
	}
	return e.execution(), nil
}

// startCTEs inserts the run (x) and its start context (sc), both only if
// no run has the id: the run's parameters are $first to $first+7, its
// context's the next five, and a queued run's place the next four (its
// status is then 'queued'; an unqueued run leaves the queue columns out).
func startCTEs(first int, queued bool) string {
	p := func(i int) string { return "$" + strconv.Itoa(first+i) }
	cols, vals := "", ""
	if queued {
		cols = " status, queue, partition_key, priority, start_at,"
		vals = " '" + string(store.ExecQueued) + "', " + p(13) + ", " + p(14) + ", " + p(15) + ", " + p(16) + ","
	}
	return `x AS (
		INSERT INTO voltro_workflow_executions (id, name, shard, idem_key, input, parent_id, parent_close, runner,` + cols + `
			created_at, updated_at)
		VALUES (` + p(0) + `, ` + p(1) + `, ` + p(2) + `, ` + p(3) + `, ` + p(4) + `, ` + p(5) + `, ` + p(6) + `, ` + p(7) + `,` + vals + ` now(), now())
		ON CONFLICT (id) DO NOTHING
		RETURNING created_at
	), sc AS (
		INSERT INTO _voltro_workflow_start_contexts
			("executionId", subject, trace, source, "parentId", "parentClose", "createdAt")
		SELECT ` + p(0) + `::text, ` + p(8) + `::text, ` + p(9) + `::text, ` + p(10) + `::text, ` + p(11) + `::text, ` + p(12) + `::text, now() FROM x
		ON CONFLICT ("executionId") DO UPDATE SET subject = EXCLUDED.subject, trace = EXCLUDED.trace,
			source = EXCLUDED.source, "parentId" = EXCLUDED."parentId",
			"parentClose" = EXCLUDED."parentClose", "createdAt" = now()
	)`
}

// sqlStartExecution inserts the run and its start context and enqueues the
// start message, all only if no run has the id; otherwise it returns the
// stored run (when its snapshot shows it). $15-$27 are the run's.
var sqlStartExecution = `WITH ` + startCTEs(15, false) + `, ` + enqueueCTEs("x") + `
	SELECT (SELECT created_at FROM x), ` + execCols + `, ` + enqueueResultCols + `
	FROM ` + enqueueResultFrom("x") + `
	LEFT JOIN voltro_workflow_executions e ON e.id = $15 AND NOT EXISTS (SELECT 1 FROM x)`

// sqlStartQueued is sqlStartExecution for a run started on a queue: it
// inserts the run queued, with its place ($14-$17), and enqueues nothing
// (Dequeue enqueues its start message). $1-$13 are the run's.
var sqlStartQueued = `WITH ` + startCTEs(1, true) + `
	SELECT (SELECT created_at FROM x), ` + execCols + `
	FROM (SELECT 1) one
	LEFT JOIN voltro_workflow_executions e ON e.id = $1 AND NOT EXISTS (SELECT 1 FROM x)`

func (s *Store) StartExecution(ctx context.Context, x store.Execution, sc store.StartContext, start *store.Message, claim *store.EnqueueClaim) (store.Execution, bool, store.EnqueueResult, error) {
	st, err := s.newStart(store.StartRequest{Exec: x, Context: sc, Message: start, Claim: claim})
	if err != nil {
		return store.Execution{}, false, store.EnqueueResult{}, err
	}
	if err := s.pool.QueryRow(ctx, st.sql(), st.args...).Scan(st.dest()...); err != nil {
		return store.Execution{}, false, store.EnqueueResult{}, wrapErr("start execution", err)
	}
	o := s.started(ctx, st)
	return o.Stored, o.Existing, o.Result, o.Err
}

var _ store.BatchStarter = (*Store)(nil)

// StartExecutions sends every start as one pipelined implicit transaction,
// in id order (two batches that start the same ids never wait on each
// other in a cycle).
func (s *Store) StartExecutions(ctx context.Context, reqs []store.StartRequest) ([]store.StartOutcome, error) {
	sts := make([]*startRow, len(reqs))
	order := make([]int, len(reqs))
	for i, q := range reqs {
		st, err := s.newStart(q)
		if err != nil {
			return nil, err
		}
		sts[i], order[i] = st, i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(reqs[a].Exec.ID, reqs[b].Exec.ID) })
	var b pgx.Batch
	for _, i := range order {
		st := sts[i]
		b.Queue(st.sql(), st.args...).QueryRow(func(r pgx.Row) error { return r.Scan(st.dest()...) })
	}
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return nil, wrapErr("start executions", err)
	}
	out := make([]store.StartOutcome, len(reqs))
	for i, st := range sts {
		out[i] = s.started(ctx, st)
	}
	return out, nil
}

// startRow is one start's statement arguments and what it reads back.
type startRow struct {
	q       store.StartRequest
	queued  bool // started on a queue: sqlStartQueued, no message
	args    []any
	key     *string
	created *time.Time
	stored  execScan
	msg     enqueueScan
}

func (s *Store) newStart(q store.StartRequest) (*startRow, error) {
	x, sc := q.Exec, q.Context
	if x.ID == "" {
		return nil, errs.New(errs.CodeInvalidArgument, "workflow execution id is empty")
	}
	if x.Queue != "" {
		// A queued run's start message is Dequeue's to enqueue: none now.
		q.Message, q.Claim = nil, nil
		return &startRow{q: q, queued: true, args: []any{x.ID, x.Name, x.Shard, x.Key, x.Input, x.ParentID, x.ParentClose, x.Runner,
			sc.Subject, sc.Trace, sc.Source, sc.ParentID, sc.ParentClose,
			x.Queue, x.Partition, x.Priority, nullTime(x.StartAt)}}, nil
	}
	args, key, err := s.enqueueArgs(q.Message, q.Claim, x.ID, x.Name, x.Shard, x.Key, x.Input, x.ParentID, x.ParentClose, x.Runner,
		sc.Subject, sc.Trace, sc.Source, sc.ParentID, sc.ParentClose)
	if err != nil {
		return nil, err
	}
	return &startRow{q: q, args: args, key: key}, nil
}

func (st *startRow) sql() string {
	if st.queued {
		return sqlStartQueued
	}
	return sqlStartExecution
}

func (st *startRow) dest() []any {
	d := append([]any{&st.created}, st.stored.dest()...)
	if st.queued {
		return d
	}
	return append(d, st.msg.dest()...)
}

// started turns what a start statement read back into its outcome.
func (s *Store) started(ctx context.Context, st *startRow) store.StartOutcome {
	x := st.q.Exec
	if st.created == nil {
		if st.stored.x.ID != "" {
			return store.StartOutcome{Stored: st.stored.execution(), Existing: true}
		}
		// The run committed while our insert waited on it: read it afresh.
		got, err := s.GetExecution(ctx, x.ID)
		return store.StartOutcome{Stored: got, Existing: err == nil, Err: err}
	}
	created := *st.created
	stored := store.Execution{
		ID: x.ID, Name: x.Name, Shard: x.Shard, Key: x.Key, Status: store.ExecRunning, Input: slices.Clone(x.Input),
		ParentID: x.ParentID, ParentClose: x.ParentClose, Runner: x.Runner, CreatedAt: created, UpdatedAt: created,
	}
	if st.queued {
		stored.Status = store.ExecQueued
		stored.Queue, stored.Partition, stored.Priority, stored.StartAt = x.Queue, x.Partition, x.Priority, x.StartAt
		return store.StartOutcome{Stored: stored}
	}
	res, err := s.result(ctx, "start execution", st.q.Message, st.key, &st.msg)
	if err != nil {
		return store.StartOutcome{Err: err}
	}
	return store.StartOutcome{Result: res, Stored: stored}
}

func (s *Store) GetExecution(ctx context.Context, id string) (store.Execution, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+execCols+` FROM voltro_workflow_executions e WHERE e.id = $1`, id)
	if err != nil {
		return store.Execution{}, wrapErr("get execution", err)
	}
	x, err := pgx.CollectExactlyOneRow(rows, scanExecution)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Execution{}, errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	}
	if err != nil {
		return store.Execution{}, wrapErr("get execution", err)
	}
	return x, nil
}

// pollCols is execCols with the input of an unfinished run left out.
var pollCols = strings.Replace(execCols, "e.input,", "CASE WHEN e.status IN ('"+string(store.ExecCompleted)+"', '"+string(store.ExecFailed)+"', '"+
	string(store.ExecCancelled)+"') THEN e.input END,", 1)

func (s *Store) PollExecutions(ctx context.Context, ids []string) ([]store.Execution, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+pollCols+` FROM voltro_workflow_executions e WHERE e.id = ANY($1::text[])`, ids)
	if err != nil {
		return nil, wrapErr("poll executions", err)
	}
	out, err := pgx.CollectRows(rows, scanExecution)
	if err != nil {
		return nil, wrapErr("poll executions", err)
	}
	return out, nil
}

func (s *Store) GetStartContext(ctx context.Context, id string) (store.StartContext, error) {
	sc := store.StartContext{ExecutionID: id}
	err := s.pool.QueryRow(ctx, `SELECT subject, trace, source, "parentId", "parentClose"
		FROM _voltro_workflow_start_contexts WHERE "executionId" = $1`, id).
		Scan(&sc.Subject, &sc.Trace, &sc.Source, &sc.ParentID, &sc.ParentClose)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.StartContext{}, errs.New(errs.CodeNotFound, "no start context for %q", id)
	}
	if err != nil {
		return store.StartContext{}, wrapErr("get start context", err)
	}
	return sc, nil
}

// ListExecutions filters with at most one index each way: status, name and
// parent have their own (created_at DESC, id DESC) indexes, which also
// serve the time bounds and the keyset cursor as one range; a queue's runs
// come from the queue index.
func (s *Store) ListExecutions(ctx context.Context, f store.ExecutionFilter) ([]store.Execution, error) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.Status != "" {
		add("e.status = ?", string(f.Status))
	}
	if f.Name != "" {
		add("e.name = ?", f.Name)
	}
	if f.ParentID != "" {
		// The parent index is partial: repeat its predicate so a generic
		// plan may use it.
		add("e.parent_id = ? AND e.parent_id <> ''", f.ParentID)
	}
	if f.Queue != "" {
		// served by the partial queue index (queue = $n implies queue IS
		// NOT NULL), sorted: a queue's runs, not every run, are read
		add("e.queue = ?", f.Queue)
	}
	if !f.Since.IsZero() {
		add("e.created_at >= ?", f.Since)
	}
	if !f.Until.IsZero() {
		add("e.created_at < ?", f.Until)
	}
	if c := f.After; c != nil {
		// a row comparison the (created_at DESC, id DESC) indexes serve as a range
		args = append(args, c.CreatedAt, c.ID)
		where = append(where, "(e.created_at, e.id) < ($"+strconv.Itoa(len(args)-1)+", $"+strconv.Itoa(len(args))+")")
	}
	q := `SELECT ` + execCols + ` FROM voltro_workflow_executions e`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY e.created_at DESC, e.id DESC`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += ` LIMIT $` + strconv.Itoa(len(args))
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, wrapErr("list executions", err)
	}
	out, err := pgx.CollectRows(rows, scanExecution)
	if err != nil {
		return nil, wrapErr("list executions", err)
	}
	return out, nil
}

func (s *Store) Journal(ctx context.Context, id string) ([]store.JournalEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, kind, name, result, error, attempts, runner, started_at, finished_at
		FROM voltro_workflow_journal WHERE execution_id = $1 ORDER BY seq`, id)
	if err != nil {
		return nil, wrapErr("journal", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.JournalEntry, error) {
		e := store.JournalEntry{ExecutionID: id}
		var kind string
		var started *time.Time
		err := row.Scan(&e.Seq, &kind, &e.Name, &e.Result, &e.Error, &e.Attempts, &e.Runner, &started, &e.FinishedAt)
		e.Kind, e.StartedAt = store.JournalKind(kind), timeOf(started)
		return e, err
	})
	if err != nil {
		return nil, wrapErr("journal", err)
	}
	return out, nil
}

// sqlRunWrite is one store.RunWrite in one statement: the fence and the
// run's status before ($1-$4); the fence read locks the ledger row (FOR
// SHARE) until the commit, so a takeover, which updates that row, waits
// for the write or, once it has committed, fails the fence (a plain read
// would let a write whose statement began before a takeover commit after
// it); then the journal entry when $5 ($6-$14), the
// update when $15 ($16-$21, $21 = terminal: output, error and finished_at
// are set then) — only if the entry was inserted, when there is one — and
// the completion of message $22 (0: none) — only if the update happened.
// A completed workflow message gets an empty reply row, as Complete writes
// one, and announces nothing: nobody waits on a workflow message's reply.
const sqlRunWrite = `WITH f AS (
		SELECT EXISTS (SELECT 1 FROM voltro_shard_locks WHERE shard = $1 AND owner = $2 AND epoch = $3 AND $2 <> '' FOR SHARE) AS owned,
			(SELECT status FROM voltro_workflow_executions WHERE id = $4) AS before
	), ins AS (
		INSERT INTO voltro_workflow_journal (execution_id, seq, kind, name, result, error, attempts, runner, started_at, finished_at)
		SELECT $4::text, $6::integer, $7::text, $8::text, $9::bytea, $10::bytea, $11::integer, $12::text, $13::timestamptz,
			coalesce($14::timestamptz, now())
		FROM f WHERE $5::boolean AND f.owned AND f.before IS NOT NULL
		ON CONFLICT (execution_id, seq) DO NOTHING
		RETURNING 1
	), u AS (
		UPDATE voltro_workflow_executions x SET status = $16, waiting_on = $19, updated_at = now(),
			runner = CASE WHEN $20::text = '' THEN x.runner ELSE $20::text END,
			output = CASE WHEN $21::boolean THEN $17::bytea ELSE x.output END,
			error = CASE WHEN $21::boolean THEN $18::bytea ELSE x.error END,
			finished_at = CASE WHEN $21::boolean THEN now() ELSE x.finished_at END
		FROM f
		WHERE $15::boolean AND f.owned AND x.id = $4 AND x.status NOT IN ('completed', 'failed', 'cancelled')
			AND (NOT $5::boolean OR EXISTS (SELECT 1 FROM ins))
		RETURNING 1
	), m AS (
		UPDATE voltro_messages m SET state = 'processed', processed_at = now(), claim_expires_at = NULL
		WHERE m.id = $22::bigint AND m.shard = $1 AND m.state = 'claimed' AND m.claimed_by = $2 AND m.claim_epoch = $3
			AND EXISTS (SELECT 1 FROM u)
		RETURNING m.id
	), r AS (
		INSERT INTO voltro_replies (request_id, created_at) SELECT id, now() FROM m ON CONFLICT (request_id) DO NOTHING
	)
	SELECT f.owned, f.before, EXISTS (SELECT 1 FROM ins), EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM m) FROM f`

// WriteRuns sends every write in one batch: one round trip, one implicit
// transaction, one commit.
func (s *Store) WriteRuns(ctx context.Context, ws []store.RunWrite) ([]error, error) {
	b := &pgx.Batch{}
	for _, w := range ws {
		if err := store.CheckRunWrite(w); err != nil {
			return nil, err
		}
		var e store.JournalEntry
		if w.Entry != nil {
			e = *w.Entry
		}
		var u store.ExecutionUpdate
		if w.Update != nil {
			u = *w.Update
		}
		b.Queue(sqlRunWrite, w.Shard, w.Fence.Owner, w.Fence.Epoch, w.ExecutionID(),
			w.Entry != nil, e.Seq, string(e.Kind), e.Name, e.Result, e.Error, e.Attempts, e.Runner, nullTime(e.StartedAt), nullTime(e.FinishedAt),
			w.Update != nil, string(u.Status), u.Output, u.Error, u.WaitingOn, u.Runner, u.Status.Terminal(),
			w.Message)
	}
	br := s.pool.SendBatch(ctx, b)
	out := make([]error, len(ws))
	for i, w := range ws {
		var owned, inserted, updated, completed bool
		var before *string
		if err := br.QueryRow().Scan(&owned, &before, &inserted, &updated, &completed); err != nil {
			_ = br.Close()
			return nil, wrapErr("write runs", err)
		}
		out[i] = runWriteOutcome(w, owned, before, inserted, updated, completed)
	}
	if err := br.Close(); err != nil {
		return nil, wrapErr("write runs", err)
	}
	return out, nil
}

// runWriteOutcome names what kept a write from happening, if anything.
func runWriteOutcome(w store.RunWrite, owned bool, before *string, inserted, updated, completed bool) error {
	id := w.ExecutionID()
	switch {
	case !owned:
		return errs.New(errs.CodeFenced, "write for %s: shard %s is not held by %s at epoch %d", id, w.Shard, w.Fence.Owner, w.Fence.Epoch)
	case before == nil:
		return errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	case w.Entry != nil && !inserted:
		return errs.New(errs.CodeAlreadyExists, "journal entry %s#%d exists", id, w.Entry.Seq)
	case w.Update != nil && !updated:
		// terminal before, or finished by a concurrent update our snapshot did not show
		return errs.New(errs.CodeAlreadyExists, "workflow execution %q is already %s", id, *before)
	case w.Message != 0 && !completed:
		return errs.New(errs.CodeFenced, "workflow execution %q was written, but message %d is not claimed by %s at epoch %d", id, w.Message, w.Fence.Owner, w.Fence.Epoch)
	}
	return nil
}

// sqlSendSignal stores the signal if the run exists and has none of that
// name, and enqueues the wake only then. $15-$17 are the signal's.
var sqlSendSignal = `WITH x AS (
		SELECT id FROM voltro_workflow_executions WHERE id = $15
	), sig AS (
		INSERT INTO voltro_workflow_signals (execution_id, name, payload, created_at)
		SELECT x.id, $16::text, $17::bytea, now() FROM x
		ON CONFLICT (execution_id, name) DO NOTHING
		RETURNING execution_id
	), ` + enqueueCTEs("sig") + `
	SELECT EXISTS (SELECT 1 FROM x), EXISTS (SELECT 1 FROM sig), ` + enqueueResultCols + `
	FROM ` + enqueueResultFrom("sig")

func (s *Store) SendSignal(ctx context.Context, sig store.Signal, wake *store.Message) (bool, error) {
	args, key, err := s.enqueueArgs(wake, nil, sig.ExecutionID, sig.Name, sig.Payload)
	if err != nil {
		return false, err
	}
	var found, stored bool
	var msg enqueueScan
	if err := s.pool.QueryRow(ctx, sqlSendSignal, args...).Scan(append([]any{&found, &stored}, msg.dest()...)...); err != nil {
		return false, wrapErr("send signal", err)
	}
	if !found {
		return false, errs.New(errs.CodeNotFound, "no workflow execution %q", sig.ExecutionID)
	}
	if !stored {
		return false, nil
	}
	if _, err := s.result(ctx, "send signal", wake, key, &msg); err != nil {
		return true, err
	}
	return true, nil
}

func (s *Store) GetSignal(ctx context.Context, id, name string) (*store.Signal, error) {
	sig := store.Signal{ExecutionID: id, Name: name}
	err := s.pool.QueryRow(ctx, `SELECT payload, created_at FROM voltro_workflow_signals WHERE execution_id = $1 AND name = $2`, id, name).
		Scan(&sig.Payload, &sig.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("get signal", err)
	}
	return &sig, nil
}

// sqlRequestCancel marks a run that is not finished cancel-requested and
// enqueues the wake only then. $15 is the run's id.
var sqlRequestCancel = `WITH x AS (
		SELECT id FROM voltro_workflow_executions WHERE id = $15
	), u AS (
		UPDATE voltro_workflow_executions SET cancel_requested = true, updated_at = now()
		WHERE id = $15 AND status NOT IN ('completed', 'failed', 'cancelled')
		RETURNING id
	), ` + enqueueCTEs("u") + `
	SELECT EXISTS (SELECT 1 FROM x), EXISTS (SELECT 1 FROM u), ` + enqueueResultCols + `
	FROM ` + enqueueResultFrom("u")

func (s *Store) RequestCancel(ctx context.Context, id string, wake *store.Message) (bool, error) {
	args, key, err := s.enqueueArgs(wake, nil, id)
	if err != nil {
		return false, err
	}
	var found, marked bool
	var msg enqueueScan
	if err := s.pool.QueryRow(ctx, sqlRequestCancel, args...).Scan(append([]any{&found, &marked}, msg.dest()...)...); err != nil {
		return false, wrapErr("request cancel", err)
	}
	if !found {
		return false, errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	}
	if !marked {
		return false, nil
	}
	if _, err := s.result(ctx, "request cancel", wake, key, &msg); err != nil {
		return true, err
	}
	return true, nil
}

// nullTime is NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// timeOf is the zero time for NULL.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
