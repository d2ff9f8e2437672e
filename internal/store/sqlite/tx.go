// Writes inside the caller's transaction (store.TxWriter) and the wait for
// its commit (store.CommitWaiter). A SQLite file has no notification and
// no row lock another connection could wait on, so AwaitCommit reads the
// message's row with a short backoff until it is there.

package sqlite

import (
	"context"
	"database/sql"
	"strconv"
	"time"

	"github.com/voltro/voltro/internal/store"
)

var (
	_ store.TxWriter     = (*Store)(nil)
	_ store.CommitWaiter = (*Store)(nil)
)

const sqlTxIdentity = `SELECT created_at FROM voltro_cluster_config WHERE id = 1`

// checkTx proves that tx reaches this store's file.
func (s *Store) checkTx(ctx context.Context, tx *sql.Tx) error {
	if tx == nil {
		return store.NoTx()
	}
	var theirs int64
	err := tx.QueryRowContext(ctx, sqlTxIdentity).Scan(&theirs)
	return s.txID.Check(ctx, store.SQLite, func(ctx context.Context) (string, error) {
		var own int64
		if err := s.queryRowR(ctx, sqlTxIdentity).Scan(&own); err != nil {
			return "", s.wrap(err, "read the cluster config")
		}
		return strconv.FormatInt(own, 10), nil
	}, strconv.FormatInt(theirs, 10), err)
}

func (s *Store) StartExecutionTx(ctx context.Context, tx *sql.Tx, q store.StartRequest) (bool, store.EnqueueResult, error) {
	if err := s.checkTx(ctx, tx); err != nil {
		return false, store.EnqueueResult{}, err
	}
	x, sc, t := q.Exec, q.Context, s.now()
	status, place := queuedStart(x)
	r, err := tx.ExecContext(ctx, insertExecSQL, append([]any{
		sql.Named("id", x.ID), sql.Named("name", x.Name), sql.Named("shard", x.Shard), sql.Named("idem_key", x.Key),
		sql.Named("status", string(status)), sql.Named("input", blob(x.Input)), sql.Named("output", nil),
		sql.Named("error", nil), sql.Named("parent_id", x.ParentID), sql.Named("parent_close", x.ParentClose),
		sql.Named("cancel_requested", false), sql.Named("waiting_on", ""), sql.Named("runner", x.Runner),
		sql.Named("now", t)}, place...)...)
	if err != nil {
		return false, store.EnqueueResult{}, s.wrap(err, "start workflow execution in the caller's transaction")
	}
	if n, err := r.RowsAffected(); err != nil || n == 0 {
		return err == nil, store.EnqueueResult{}, s.wrap(err, "start workflow execution in the caller's transaction")
	}
	if _, err := tx.ExecContext(ctx, upsertStartSQL, x.ID, sc.Subject, sc.Trace, sc.Source, sc.ParentID, sc.ParentClose, t); err != nil {
		return false, store.EnqueueResult{}, s.wrap(err, "start workflow execution in the caller's transaction")
	}
	if status == store.ExecQueued {
		return false, store.EnqueueResult{}, nil // its start message is Dequeue's to enqueue
	}
	res, err := s.enqueueIn(ctx, tx, q.Message, t)
	return false, res, err
}

func (s *Store) EnqueueTx(ctx context.Context, tx *sql.Tx, m *store.Message) (store.EnqueueResult, error) {
	if err := s.checkTx(ctx, tx); err != nil {
		return store.EnqueueResult{}, err
	}
	return s.enqueueIn(ctx, tx, m, s.now())
}

// enqueueIn inserts m pending through tx (enqueueSQL without a claim).
func (s *Store) enqueueIn(ctx context.Context, tx *sql.Tx, m *store.Message, t int64) (store.EnqueueResult, error) {
	args, deliverAt, _, err := enqueueArgs(m, nil, t)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	var id int64
	var state string
	err = tx.QueryRowContext(ctx, enqueueSQL, args...).Scan(&id, &state)
	if err == sql.ErrNoRows && m.DedupeKey != "" {
		res := store.EnqueueResult{Duplicate: true}
		err = tx.QueryRowContext(ctx, `SELECT id FROM voltro_messages WHERE dedupe_key = ?`, m.DedupeKey).Scan(&res.ID)
		return res, s.wrap(err, "enqueue in the caller's transaction: read the duplicate")
	}
	if err != nil {
		return store.EnqueueResult{}, s.wrap(err, "enqueue in the caller's transaction")
	}
	m.ID, m.DeliverAt, m.State, m.CreatedAt = id, fromMicros(deliverAt), store.MessageState(state), fromMicros(t)
	return store.EnqueueResult{ID: id}, nil
}

// awaitFor bounds AwaitCommit's reads: a transaction still open (or rolled
// back) after that long is left to the owner's poll.
const (
	awaitFor     = time.Minute
	awaitMaxStep = 20 * time.Millisecond
)

// AwaitCommit reads the row every step (1 ms doubling to awaitMaxStep)
// until it is there (committed) or awaitFor has passed (committed=false:
// rolled back, or still open).
func (s *Store) AwaitCommit(ctx context.Context, id int64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, awaitFor)
	defer cancel()
	step := time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case <-t.C:
		}
		var n int
		if err := s.queryRowR(ctx, `SELECT COUNT(*) FROM voltro_messages WHERE id = ?`, id).Scan(&n); err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			return false, s.wrap(err, "await the commit of message "+strconv.FormatInt(id, 10))
		}
		if n > 0 {
			return true, nil
		}
		t.Reset(step)
		step = min(2*step, awaitMaxStep)
	}
}
