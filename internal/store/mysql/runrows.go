// Run writes as a few multi-row statements (writeRows), for a store that
// cannot send them as one multi-statement batch (Galera): a transaction of
// many runs' writes then costs a fixed number of round trips, not a few
// per write.

package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/voltro/voltro/internal/store"
)

// errRowsMoved rolls back a writeRows transaction in which a statement
// changed other rows than the state read at its start said it would (a
// run, a claim or an entry changed in between); the next try reads again.
var errRowsMoved = errors.New("rows changed after the state of the writes was read")

// rowsApply reports whether writeRows can apply ws: no two writes of one
// run or one message (each statement changes a row once, and a later
// write of a run depends on an earlier one).
func rowsApply(ws []store.RunWrite) bool {
	runs := make(map[string]bool, len(ws))
	msgs := make(map[int64]bool, len(ws))
	for _, w := range ws {
		if id := w.ExecutionID(); runs[id] {
			return false
		} else {
			runs[id] = true
		}
		if w.Message != 0 {
			if msgs[w.Message] {
				return false
			}
			msgs[w.Message] = true
		}
	}
	return true
}

// rowsPlan is what writeRows does for one write, decided from its state.
type rowsPlan struct{ insert, update, complete bool }

// planRows decides, from the state st of w read in the transaction, which
// of w's statements happen: each only if the one before it did, as the
// gates of writeStepwise would decide on that state.
func planRows(w store.RunWrite, st runState) rowsPlan {
	var p rowsPlan
	ok := st.held && st.status.Valid
	if w.Entry != nil {
		if p.insert = ok && !st.entry; !p.insert {
			return p
		}
	}
	if w.Update != nil {
		if p.update = ok && !store.ExecStatus(st.status.String).Terminal(); !p.update {
			return p
		}
	}
	p.complete = w.Message != 0 && st.claimed
	return p
}

// writeRows applies ws in tx: one read of every write's state (causal on
// Galera), then at most one multi-row statement per table for what that
// state allows (planRows), each checked to change exactly the rows it
// should (else errRowsMoved), then the fence write for the fences of the
// writes that changed something (errFenceMoved when one no longer holds).
// The outcomes are those writeStepwise gives on the same state.
func writeRows(ctx context.Context, tx *sql.Tx, ws []store.RunWrite) ([]error, error) {
	all := make([]int, len(ws))
	for i := range all {
		all[i] = i
	}
	states, err := readRunStates(ctx, tx, ws, all, true)
	if err != nil {
		return nil, err
	}
	plans := make([]rowsPlan, len(ws))
	var ins, upd, done []store.RunWrite
	for i, w := range ws {
		p := planRows(w, states[i])
		plans[i] = p
		if p.insert {
			ins = append(ins, w)
		}
		if p.update {
			upd = append(upd, w)
		}
		if p.complete {
			done = append(done, w)
		}
	}
	if err := execRows(ctx, tx, len(ins), func() (string, []any) { return entryRows(ins) }); err != nil {
		return nil, err
	}
	if err := execRows(ctx, tx, len(upd), func() (string, []any) { return updateRows(upd) }); err != nil {
		return nil, err
	}
	if err := execRows(ctx, tx, len(done), func() (string, []any) { return messageRows(done) }); err != nil {
		return nil, err
	}
	if len(done) > 0 {
		q, args := replyRows(done)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return nil, err
		}
	}
	if fs := fenceKeys(ws, func(i int) bool { return plans[i].insert || plans[i].update }); len(fs) > 0 {
		q, args := fenceWrite(fs)
		if err := execRows(ctx, tx, len(fs), func() (string, []any) { return q, args }); errors.Is(err, errRowsMoved) {
			return nil, errFenceMoved
		} else if err != nil {
			return nil, err
		}
	}
	out := make([]error, len(ws))
	for i, w := range ws {
		p := plans[i]
		out[i], _ = judge(w, p.insert, p.update, p.complete, states[i])
	}
	return out, nil
}

// execRows runs the statement of stmt, when want > 0, and checks that it
// changed want rows. A key conflict (an entry written since the read)
// counts as a change it did not expect.
func execRows(ctx context.Context, tx *sql.Tx, want int, stmt func() (string, []any)) error {
	if want == 0 {
		return nil
	}
	q, args := stmt()
	res, err := tx.ExecContext(ctx, q, args...)
	if isDuplicate(err) {
		return errRowsMoved
	}
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != int64(want) {
		return errRowsMoved
	}
	return nil
}

// entryRows inserts the journal entries of ws in key order.
func entryRows(ws []store.RunWrite) (string, []any) {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b store.RunWrite) int {
		if c := strings.Compare(a.Entry.ExecutionID, b.Entry.ExecutionID); c != 0 {
			return c
		}
		return cmp.Compare(a.Entry.Seq, b.Entry.Seq)
	})
	rows := make([]string, len(ws))
	args := make([]any, 0, 10*len(ws))
	for i, w := range ws {
		e := w.Entry
		rows[i] = "(?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))"
		args = append(args, e.ExecutionID, e.Seq, string(e.Kind), e.Name, e.Result, e.Error, e.Attempts, e.Runner,
			nullTime(e.StartedAt), nullTime(e.FinishedAt))
	}
	return "INSERT INTO voltro_workflow_journal (execution_id, seq, kind, name, result, error, attempts, runner, started_at, finished_at) VALUES " +
		strings.Join(rows, ", "), args
}

// updateRows sets the state of the runs of ws, in id order, while they are
// not terminal: the runs joined with a derived table of their new state
// (flags say whether a row sets its runner and its outcome).
func updateRows(ws []store.RunWrite) (string, []any) {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b store.RunWrite) int { return strings.Compare(a.Update.ID, b.Update.ID) })
	rows := make([]string, len(ws))
	args := make([]any, 0, 8*len(ws))
	for i, w := range ws {
		u := w.Update
		if i == 0 {
			rows[i] = "SELECT ? AS id, ? AS status, ? AS waiting_on, ? AS set_runner, ? AS runner, ? AS term, ? AS output, ? AS error"
		} else {
			rows[i] = "SELECT ?, ?, ?, ?, ?, ?, ?, ?"
		}
		args = append(args, u.ID, string(u.Status), u.WaitingOn, u.Runner != "", u.Runner, u.Status.Terminal(), u.Output, u.Error)
	}
	return "UPDATE voltro_workflow_executions e JOIN (" + strings.Join(rows, " UNION ALL ") + ") v ON e.id = v.id" +
		" SET e.status = v.status, e.waiting_on = v.waiting_on, e.updated_at = UTC_TIMESTAMP(6)," +
		" e.runner = IF(v.set_runner, v.runner, e.runner), e.output = IF(v.term, v.output, e.output)," +
		" e.error = IF(v.term, v.error, e.error), e.finished_at = IF(v.term, UTC_TIMESTAMP(6), e.finished_at)" +
		" WHERE e." + notTerminal, args
}

// messageRows marks the messages of ws processed while each is claimed at
// its write's fence, in id order.
func messageRows(ws []store.RunWrite) (string, []any) {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b store.RunWrite) int { return cmp.Compare(a.Message, b.Message) })
	args := make([]any, 0, 5*len(ws))
	for _, w := range ws {
		args = append(args, w.Message)
	}
	tuples := make([]string, len(ws))
	for i, w := range ws {
		tuples[i] = "(?, ?, ?, ?)"
		args = append(args, messageArgs(w)...)
	}
	return "UPDATE voltro_messages SET state = 'processed', processed_at = UTC_TIMESTAMP(6), claim_expires_at = NULL WHERE id IN (" +
		placeholders(len(ws)) + ") AND state = 'claimed' AND (id, shard, claimed_by, claim_epoch) IN (" + strings.Join(tuples, ", ") + ")", args
}

// replyRows stores the empty replies of the messages of ws (see emptyReply).
func replyRows(ws []store.RunWrite) (string, []any) {
	rows := make([]string, len(ws))
	args := make([]any, len(ws))
	for i, w := range ws {
		rows[i], args[i] = "(?, UTC_TIMESTAMP(6))", w.Message
	}
	return "INSERT INTO voltro_replies (request_id, created_at) VALUES " + strings.Join(rows, ", ") +
		" ON DUPLICATE KEY UPDATE request_id = voltro_replies.request_id", args
}
