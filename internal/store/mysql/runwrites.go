// The fenced run writes (store.RunWriter): WriteRuns, one statement alone,
// several stepwise in a transaction or as one multi-statement batch.

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// fenceSQL is true while the shard's ledger row names the owner at the epoch.
const fenceSQL = "EXISTS (SELECT 1 FROM voltro_shard_locks WHERE shard = ? AND owner = ? AND epoch = ?)"

// fenceWrite bumps the ledger rows of the fences a transaction wrote
// through (see 0600_fence_writes.sql): a write, not a read, so Galera
// certifies the transaction against a takeover on any node, and an
// exclusive lock until the commit, so a takeover here waits for it. The
// rows are named in key order (shard IN …), so two transactions lock
// them in the same order. It always changes the rows it matches.
func fenceWrite(fs []fenceKey) (string, []any) {
	slices.SortFunc(fs, func(a, b fenceKey) int { return strings.Compare(a.shard, b.shard) })
	args := make([]any, 0, 4*len(fs))
	for _, f := range fs {
		args = append(args, f.shard)
	}
	tuples := make([]string, len(fs))
	for i, f := range fs {
		tuples[i] = "(?, ?, ?)"
		args = append(args, f.shard, f.owner, f.epoch)
	}
	return "UPDATE voltro_shard_locks SET fence_writes = fence_writes + 1 WHERE shard IN (" + placeholders(len(fs)) +
		") AND (shard, owner, epoch) IN (" + strings.Join(tuples, ", ") + ")", args
}

// fenceKey is one ledger row a write is fenced by.
type fenceKey struct {
	shard, owner string
	epoch        int64
}

func keyOf(w store.RunWrite) fenceKey { return fenceKey{w.Shard, w.Fence.Owner, w.Fence.Epoch} }

// fenceKeys is the distinct fences of ws[i] for every i where pick holds.
func fenceKeys(ws []store.RunWrite, pick func(i int) bool) []fenceKey {
	seen := map[fenceKey]bool{}
	var out []fenceKey
	for i, w := range ws {
		if k := keyOf(w); pick(i) && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// Run writes (store.RunWriter). A write is up to four statements, each
// gated on the one before it having changed its row: the journal entry
// (inserted only through the fence and only for a run that exists), the
// run's update (through the fence, only while the run is not terminal), the
// completion of the message that ran the replay (only while it is claimed at
// the fence) and its empty reply. What tells fenced, not found and already
// exists apart is read only when one of them changed nothing.

// entryInsert appends a journal entry through the fence, for a run that
// exists (args: entryArgs).
const entryInsert = `INSERT INTO voltro_workflow_journal
	(execution_id, seq, kind, name, result, error, attempts, runner, started_at, finished_at)
	SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)) FROM DUAL
	WHERE ` + fenceSQL + ` AND EXISTS (SELECT 1 FROM voltro_workflow_executions WHERE id = ?)`

// keepEntry turns the key conflict of an entry that exists into "no row"
// where an error would end a multi-statement batch.
const keepEntry = " ON DUPLICATE KEY UPDATE seq = voltro_workflow_journal.seq"

func entryArgs(w store.RunWrite) []any {
	e := w.Entry
	return []any{e.ExecutionID, e.Seq, string(e.Kind), e.Name, e.Result, e.Error, e.Attempts, e.Runner,
		nullTime(e.StartedAt), nullTime(e.FinishedAt), w.Shard, w.Fence.Owner, w.Fence.Epoch, e.ExecutionID}
}

// runSet is the SET list of a run's update, each column prefixed with t
// ("" or "e."), and its arguments.
func runSet(u *store.ExecutionUpdate, t string) (string, []any) {
	set := t + "status = ?, " + t + "waiting_on = ?, " + t + "updated_at = UTC_TIMESTAMP(6)"
	args := []any{string(u.Status), u.WaitingOn}
	if u.Runner != "" {
		set += ", " + t + "runner = ?"
		args = append(args, u.Runner)
	}
	if u.Status.Terminal() {
		set += ", " + t + "output = ?, " + t + "error = ?, " + t + "finished_at = UTC_TIMESTAMP(6)"
		args = append(args, u.Output, u.Error)
	}
	return set, args
}

// runUpdate sets the run's state through the write's fence while the run is
// not terminal, and only when gate (a condition, or "") holds.
func runUpdate(w store.RunWrite, gate string) (string, []any) {
	set, args := runSet(w.Update, "")
	args = append(args, w.Update.ID, w.Shard, w.Fence.Owner, w.Fence.Epoch)
	return "UPDATE voltro_workflow_executions SET " + set + " WHERE id = ? AND " + notTerminal + " AND " + fenceSQL + and(gate), args
}

// runUpdateAlone is runUpdate as one autocommit statement that also makes
// the fence write: the ledger row is joined, locked and bumped by the same
// UPDATE, which changes nothing when the fence does not hold.
func runUpdateAlone(w store.RunWrite) (string, []any) {
	set, sargs := runSet(w.Update, "e.")
	args := append([]any{w.Shard, w.Fence.Owner, w.Fence.Epoch}, sargs...)
	return "UPDATE voltro_workflow_executions e JOIN voltro_shard_locks l ON l.shard = ? AND l.owner = ? AND l.epoch = ?" +
		" SET l.fence_writes = l.fence_writes + 1, " + set + " WHERE e.id = ? AND e." + notTerminal, append(args, w.Update.ID)
}

// messageDone marks the write's message processed while it is claimed at
// the write's fence (args: messageArgs).
const messageDone = `UPDATE voltro_messages SET state = 'processed', processed_at = UTC_TIMESTAMP(6), claim_expires_at = NULL
	WHERE id = ? AND shard = ? AND state = 'claimed' AND claimed_by = ? AND claim_epoch = ?`

func messageArgs(w store.RunWrite) []any {
	return []any{w.Message, w.Shard, w.Fence.Owner, w.Fence.Epoch}
}

// emptyReply is the reply row of a completed workflow message, as Complete
// stores one (without payload: nobody waits on a workflow message's reply).
func emptyReply(gate string) string {
	where := ""
	if gate != "" {
		where = " WHERE " + gate
	}
	return `INSERT INTO voltro_replies (request_id, created_at) SELECT ?, UTC_TIMESTAMP(6) FROM DUAL` + where +
		" ON DUPLICATE KEY UPDATE request_id = voltro_replies.request_id"
}

func and(gate string) string {
	if gate == "" {
		return ""
	}
	return " AND " + gate
}

// runStateCols read what judges a write that changed nothing: whether the
// fence holds, the run's status (NULL: no such run) and whether the entry
// exists (args: stateArgs).
const runStateCols = fenceSQL + `, (SELECT status FROM voltro_workflow_executions WHERE id = ?),
	EXISTS (SELECT 1 FROM voltro_workflow_journal WHERE execution_id = ? AND seq = ?)`

func stateArgs(w store.RunWrite) []any {
	id, eid, seq := w.ExecutionID(), "", -1
	if w.Entry != nil {
		eid, seq = w.Entry.ExecutionID, w.Entry.Seq
	}
	return []any{w.Shard, w.Fence.Owner, w.Fence.Epoch, id, eid, seq}
}

// claimCol reads, after runStateCols, whether the write's message is
// claimed at its fence (args: messageArgs).
const claimCol = `, EXISTS (SELECT 1 FROM voltro_messages WHERE id = ? AND shard = ? AND state = 'claimed' AND claimed_by = ? AND claim_epoch = ?)`

// runState is what runStateCols (and claimCol) read.
type runState struct {
	held    bool
	status  sql.NullString
	entry   bool
	claimed bool
}

// judge names what kept w from happening, given which of its statements
// changed their row (each runs only if the one before it did) and, if one
// did not, st, the state read afterwards. again reports a miss the state
// does not explain, which a Galera node that had not yet applied the
// latest writes when the statement ran (wsrep_sync_wait makes reads causal,
// not these writes) can cause: a causal read and another try settle it.
func judge(w store.RunWrite, inserted, updated, completed bool, st runState) (out error, again bool) {
	id := w.ExecutionID()
	fenced := func() error {
		return errs.New(errs.CodeFenced, "write for %s: shard %s is not held by %s at epoch %d", id, w.Shard, w.Fence.Owner, w.Fence.Epoch)
	}
	switch {
	case w.Entry != nil && !inserted:
		switch {
		case !st.held:
			return fenced(), false
		case !st.status.Valid:
			return errs.New(errs.CodeNotFound, "no workflow execution %q", id), false
		case st.entry:
			return errs.New(errs.CodeAlreadyExists, "journal entry %s#%d exists", w.Entry.ExecutionID, w.Entry.Seq), false
		}
		return fenced(), true
	case w.Update != nil && !updated:
		switch {
		case !st.held:
			return fenced(), false
		case !st.status.Valid:
			return errs.New(errs.CodeNotFound, "no workflow execution %q", id), false
		case store.ExecStatus(st.status.String).Terminal():
			return errs.New(errs.CodeAlreadyExists, "workflow execution %q is already %s", id, st.status.String), false
		}
		// matched, but nothing to change (or not applied here yet); the
		// message, if any, was not completed
		again = true
	}
	if w.Message != 0 && !completed {
		return errs.New(errs.CodeFenced, "workflow execution %q was written, but message %d is not claimed by %s at epoch %d",
			id, w.Message, w.Fence.Owner, w.Fence.Epoch), again
	}
	return nil, again
}

// lagging reports outcomes a Galera node behind the cluster can produce
// for writes that would succeed: a ledger row, a run or a claim written on
// another node and not applied here yet.
func lagging(out []error) bool {
	for _, err := range out {
		if errors.Is(err, errs.ErrFenced) || errors.Is(err, errs.ErrNotFound) {
			return true
		}
	}
	return false
}

// errLagging rolls back a first try on Galera that may have missed writes
// of other nodes.
var errLagging = errors.New("a write missed what may not be applied on this node yet")

// errFenceMoved rolls back a transaction whose fence write found a shard
// no longer held at a fence its writes had passed: a takeover committed in
// between. The next try judges those writes fenced.
var errFenceMoved = errors.New("a shard moved after its writes passed the fence")

// fencedTx is the isolation of the run-write transactions: READ COMMITTED,
// so the fence checks of the statements are plain reads (no shared lock on
// the ledger row that the fence write at the end would have to upgrade,
// deadlocking with another transaction of the same shard) and the fence
// write at the end is what holds the shard.
var fencedTx = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// WriteRuns sends a write that is one update alone in autocommit, one
// statement that also makes the fence write (one round trip). Anything else
// is one transaction for the whole slice, re-run whole after a deadlock or
// a certification conflict: with multi statements on and no Galera (see
// batched), one round trip (writeBatch); otherwise statement by statement
// (writeStepwise), 3 + one per statement round trips for a single write,
// and as a few multi-row statements (writeRows), at most 9 round trips
// whatever the number, for several of distinct runs. Every transaction
// ends (or, in a batch, starts) with the fence write (fenceWrite), so a
// takeover on another Galera node aborts it at certification, and its
// re-run finds the shard gone (the reads are causal there). On Galera the
// statements of a transaction are not causal reads: a first try whose
// outcomes include fenced or not found is rolled back and, after a causal
// read, run once more.
func (s *Store) WriteRuns(ctx context.Context, ws []store.RunWrite) ([]error, error) {
	for _, w := range ws {
		if err := store.CheckRunWrite(w); err != nil {
			return nil, err
		}
	}
	switch {
	case len(ws) == 0:
		return []error{}, nil
	case len(ws) == 1 && ws[0].Message == 0 && ws[0].Entry == nil:
		out, err := s.writeAlone(ctx, ws[0])
		if err != nil {
			return nil, wrapErr("write runs", err)
		}
		return []error{out}, nil
	case s.batched():
		out, err := s.writeBatch(ctx, ws)
		return out, wrapErr("write runs", err)
	}
	var out []error
	lagged := false
	rows := len(ws) > 1 && rowsApply(ws)
	for try := 1; ; try++ {
		err := s.inTx(ctx, fencedTx, func(tx *sql.Tx) (err error) {
			if rows {
				out, err = writeRows(ctx, tx, ws)
			} else {
				out, err = writeStepwise(ctx, tx, ws)
			}
			if err == nil && s.server.galera && !lagged && lagging(out) {
				return errLagging
			}
			s.pauseBeforeCommit(ctx, err)
			return err
		})
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, errLagging) && !lagged:
			// A causal read (any table will do) makes this node apply what
			// the cluster committed before it; the next try is final.
			lagged = true
			var n int
			if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM voltro_shard_locks WHERE shard = ?", ws[0].Shard).Scan(&n); err != nil {
				return nil, wrapErr("write runs", err)
			}
		case errors.Is(err, errFenceMoved) && try < 3:
		case errors.Is(err, errRowsMoved) && try < 3:
			// Rows changed under a multi-row write twice in a row: the
			// last try goes statement by statement.
			rows = try < 2
		default:
			return nil, wrapErr("write runs", err)
		}
	}
}

// pauseBeforeCommit runs the test hook beforeCommit, if any, in a
// transaction about to commit (err == nil).
func (s *Store) pauseBeforeCommit(ctx context.Context, err error) {
	if err == nil && s.beforeCommit != nil {
		s.beforeCommit(ctx)
	}
}

// writeAlone applies an update alone in autocommit, fence write included.
// When it changed nothing, a read (causal on Galera) says why; if that read
// says it should have happened, it is tried once more.
func (s *Store) writeAlone(ctx context.Context, w store.RunWrite) (error, error) {
	query, args := runUpdateAlone(w)
	for attempt := 1; ; attempt++ {
		res, err := s.exec(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, nil
		}
		st, err := readRunStates(ctx, s.db, []store.RunWrite{w}, []int{0}, false)
		if err != nil {
			return nil, err
		}
		out, again := judge(w, false, false, false, st[0])
		if !again || attempt > 1 {
			return out, nil
		}
	}
}

// writeStepwise runs the writes statement by statement in tx, gated in Go,
// makes the fence write for the fences of the writes that changed
// something (errFenceMoved when one of them no longer holds), and reads
// the state of the writes that missed once at the end. An entry
// that exists ends its write with a key conflict, which undoes only that
// statement.
func writeStepwise(ctx context.Context, tx *sql.Tx, ws []store.RunWrite) ([]error, error) {
	type done struct{ inserted, updated, completed, exists bool }
	dones := make([]done, len(ws))
	var missed []int
	changed := func(query string, args ...any) (bool, error) {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n > 0, err
	}
	for i, w := range ws {
		d := &dones[i]
		var err error
		if w.Entry != nil {
			d.inserted, err = changed(entryInsert, entryArgs(w)...)
			if isDuplicate(err) {
				d.exists, err = true, nil
			}
			if err != nil {
				return nil, err
			}
			if !d.inserted {
				if !d.exists {
					missed = append(missed, i)
				}
				continue
			}
		}
		if w.Update != nil {
			query, args := runUpdate(w, "")
			if d.updated, err = changed(query, args...); err != nil {
				return nil, err
			}
			if !d.updated {
				missed = append(missed, i)
				continue
			}
		}
		if w.Message != 0 {
			if d.completed, err = changed(messageDone, messageArgs(w)...); err != nil {
				return nil, err
			}
			if d.completed {
				if _, err := tx.ExecContext(ctx, emptyReply(""), w.Message); err != nil {
					return nil, err
				}
			}
		}
	}
	if fs := fenceKeys(ws, func(i int) bool { return dones[i].inserted || dones[i].updated }); len(fs) > 0 {
		q, args := fenceWrite(fs)
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n != int64(len(fs)) {
			return nil, errFenceMoved
		}
	}
	states := make([]runState, len(ws))
	if len(missed) > 0 {
		st, err := readRunStates(ctx, tx, ws, missed, false)
		if err != nil {
			return nil, err
		}
		for k, i := range missed {
			states[i] = st[k]
		}
	}
	out := make([]error, len(ws))
	for i, w := range ws {
		d := dones[i]
		if d.exists {
			out[i] = errs.New(errs.CodeAlreadyExists, "journal entry %s#%d exists", w.Entry.ExecutionID, w.Entry.Seq)
			continue
		}
		out[i], _ = judge(w, d.inserted, d.updated, d.completed, states[i])
	}
	return out, nil
}

type queryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// readRunStates reads runStateCols for the writes ws[idx] in one query,
// and claimCol too when claims is set.
func readRunStates(ctx context.Context, q queryer, ws []store.RunWrite, idx []int, claims bool) ([]runState, error) {
	sels := make([]string, len(idx))
	var args []any
	for k, i := range idx {
		sels[k] = fmt.Sprintf("SELECT %d, %s", k, runStateCols)
		args = append(args, stateArgs(ws[i])...)
		if claims {
			sels[k] += claimCol
			args = append(args, messageArgs(ws[i])...)
		} else {
			sels[k] += ", FALSE"
		}
	}
	rows, err := q.QueryContext(ctx, strings.Join(sels, "\nUNION ALL "), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]runState, len(idx))
	n := 0
	for rows.Next() {
		var k int
		var st runState
		if err := rows.Scan(&k, &st.held, &st.status, &st.entry, &st.claimed); err != nil {
			return nil, err
		}
		if k < 0 || k >= len(out) {
			return nil, fmt.Errorf("run state of write %d of %d", k, len(out))
		}
		out[k] = st
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if n != len(out) {
		return nil, fmt.Errorf("%d run states for %d writes", n, len(out))
	}
	return out, nil
}

// writeBatch sends every write as one multi-statement transaction, one
// round trip, that starts with the fence write of every fence (one that
// does not hold matches nothing, and neither do its writes): the ledger
// rows are locked before the writes check them. Within a write, each statement is gated on ROW_COUNT() of the
// one before it, and the driver returns what each statement changed. Only
// when a write missed is its state read, after the commit; should that read
// fail, the outcome of those writes (of which nothing was written) is its
// error.
func (s *Store) writeBatch(ctx context.Context, ws []store.RunWrite) ([]error, error) {
	const changedOne = "ROW_COUNT() > 0"
	fq, args := fenceWrite(fenceKeys(ws, func(int) bool { return true }))
	stmts := []string{"START TRANSACTION", fq}
	type stmtOf struct{ entry, update, message int } // index in stmts, 0: none
	at := make([]stmtOf, len(ws))
	for i, w := range ws {
		gate := ""
		if w.Entry != nil {
			at[i].entry, gate = len(stmts), changedOne
			stmts, args = append(stmts, entryInsert+keepEntry), append(args, entryArgs(w)...)
		}
		if w.Update != nil {
			query, uargs := runUpdate(w, gate)
			at[i].update, gate = len(stmts), changedOne
			stmts, args = append(stmts, query), append(args, uargs...)
		}
		if w.Message != 0 {
			at[i].message = len(stmts)
			stmts = append(stmts, messageDone+and(gate), emptyReply(changedOne))
			args = append(append(args, messageArgs(w)...), w.Message)
		}
	}
	stmts = append(stmts, "COMMIT")
	n, err := s.execBatch(ctx, strings.Join(stmts, ";\n"), args...)
	if err != nil {
		return nil, err
	}
	if len(n) != len(stmts) { // the driver counts every statement; never seen otherwise
		return nil, fmt.Errorf("%d row counts for %d statements", len(n), len(stmts))
	}
	changed := func(k int) bool { return k > 0 && n[k] > 0 }
	var missed []int
	for i, w := range ws {
		if (w.Entry != nil && !changed(at[i].entry)) || (w.Update != nil && !changed(at[i].update)) {
			missed = append(missed, i)
		}
	}
	states := make([]runState, len(ws))
	var stateErr error
	if len(missed) > 0 {
		var st []runState
		if st, stateErr = readRunStates(ctx, s.db, ws, missed, false); stateErr == nil {
			for k, i := range missed {
				states[i] = st[k]
			}
		}
	}
	out := make([]error, len(ws))
	for i, w := range ws {
		if stateErr != nil && slices.Contains(missed, i) {
			out[i] = wrapErr(fmt.Sprintf("nothing was written for %s; reading why", w.ExecutionID()), stateErr)
			continue
		}
		out[i], _ = judge(w, changed(at[i].entry), changed(at[i].update), changed(at[i].message), states[i])
	}
	return out, nil
}
