// Writes inside the caller's transaction (store.TxWriter) and the wait for
// its commit (store.CommitWaiter). MySQL has no transactional notification,
// so an instance learns of the commit by a locking read of the inserted
// message: InnoDB makes it wait on the caller's row lock until the caller
// commits (the row is there) or rolls back (it is not).

package mysql

import (
	"context"
	"database/sql"

	"github.com/voltro/voltro/internal/store"
)

var (
	_ store.TxWriter     = (*Store)(nil)
	_ store.CommitWaiter = (*Store)(nil)
)

// sqlTxIdentity reads the cluster config's creation time as text, the same
// through any connection whatever its parseTime or time zone settings.
const sqlTxIdentity = "SELECT DATE_FORMAT(created_at, '%Y%m%d%H%i%s%f') FROM voltro_cluster_config WHERE id = 1"

// checkTx proves that tx reaches this store's database (on Galera, any node
// of the cluster). A failed read aborts only its own statement.
func (s *Store) checkTx(ctx context.Context, tx *sql.Tx) error {
	if tx == nil {
		return store.NoTx()
	}
	var theirs string
	err := tx.QueryRowContext(ctx, sqlTxIdentity).Scan(&theirs)
	return s.txID.Check(ctx, s.dialect, func(ctx context.Context) (string, error) {
		var own string
		if err := s.db.QueryRowContext(ctx, sqlTxIdentity).Scan(&own); err != nil {
			return "", wrapErr("read the cluster config", err)
		}
		return own, nil
	}, theirs, err)
}

func (s *Store) StartExecutionTx(ctx context.Context, tx *sql.Tx, q store.StartRequest) (bool, store.EnqueueResult, error) {
	if err := s.checkTx(ctx, tx); err != nil {
		return false, store.EnqueueResult{}, err
	}
	x := started(q.Exec)
	execArgs, scArgs := startArgs(x, q.Context)
	if _, err := tx.ExecContext(ctx, insertExec, execArgs...); isDuplicate(err) {
		return true, store.EnqueueResult{}, nil
	} else if err != nil {
		return false, store.EnqueueResult{}, wrapErr("start workflow execution in the caller's transaction", err)
	}
	if _, err := tx.ExecContext(ctx, upsertStartContext, scArgs...); err != nil {
		return false, store.EnqueueResult{}, wrapErr("start workflow execution in the caller's transaction", err)
	}
	m := startMessage(x, q.Message)
	if m == nil { // on a queue, Dequeue sends its start
		return false, store.EnqueueResult{}, nil
	}
	res, err := s.enqueueIn(ctx, tx, m)
	return false, res, err
}

func (s *Store) EnqueueTx(ctx context.Context, tx *sql.Tx, m *store.Message) (store.EnqueueResult, error) {
	if err := s.checkTx(ctx, tx); err != nil {
		return store.EnqueueResult{}, err
	}
	return s.enqueueIn(ctx, tx, m)
}

// enqueueIn inserts m pending through tx. A duplicate key fails only the
// statement (InnoDB rolls back the statement, not the transaction).
func (s *Store) enqueueIn(ctx context.Context, tx *sql.Tx, m *store.Message) (store.EnqueueResult, error) {
	query, args, dkey, err := enqueueStmt(m, nil, "")
	if err != nil {
		return store.EnqueueResult{}, err
	}
	r, err := tx.ExecContext(ctx, query, args...)
	if isDuplicate(err) && dkey != nil {
		res := store.EnqueueResult{Duplicate: true}
		if err := tx.QueryRowContext(ctx, "SELECT id FROM voltro_messages WHERE dedupe_key = ?", dkey).Scan(&res.ID); err != nil {
			return store.EnqueueResult{}, wrapErr("enqueue in the caller's transaction: read the duplicate", err)
		}
		return res, nil
	}
	if err != nil {
		return store.EnqueueResult{}, wrapErr("enqueue in the caller's transaction", err)
	}
	id, err := r.LastInsertId()
	if err != nil {
		return store.EnqueueResult{}, wrapErr("enqueue in the caller's transaction", err)
	}
	m.ID, m.State = id, store.StatePending
	return store.EnqueueResult{ID: id}, nil
}

// sqlAwaitCommit waits on the inserting transaction's lock on the row.
const sqlAwaitCommit = "SELECT COUNT(*) FROM voltro_messages WHERE id = ? LOCK IN SHARE MODE"

// AwaitCommit holds one connection of its own pool, at most awaitConns
// of them at once (none free: it gives up), in a locking read that InnoDB answers when
// the transaction that inserted message id commits or rolls back. A lock
// wait timeout (innodb_lock_wait_timeout) only starts another wait. On
// Galera a transaction on another node holds no lock here: the read
// answers at once and the owner's poll finds the message.
func (s *Store) AwaitCommit(ctx context.Context, id int64) (bool, error) {
	select {
	case s.awaitSlots <- struct{}{}:
		defer func() { <-s.awaitSlots }()
	default:
		return false, nil
	}
	for {
		var n int
		err := s.await.QueryRowContext(ctx, sqlAwaitCommit, id).Scan(&n)
		if serverErrno(err) == errLockWaitTimeout && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return false, wrapErr("await the commit of message", err)
		}
		return n > 0, nil
	}
}
