// Writes inside the caller's transaction (store.TxWriter): the start and
// enqueue statements of the pool, run through a database/sql transaction of
// the application (pgx's stdlib driver). Their pg_notify is transactional:
// PostgreSQL delivers it when the caller commits, and not at all on a
// rollback, so the owner is woken at the commit with no waiter of ours.

package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

var _ store.TxWriter = (*Store)(nil)

// sqlTxHasVoltro cannot fail on a PostgreSQL database, with or without
// voltro's tables (a failed statement would abort the caller's
// transaction); sqlTxIdentity runs only once it answered true.
const (
	sqlTxHasVoltro = `SELECT to_regclass('voltro_cluster_config') IS NOT NULL`
	sqlTxIdentity  = `SELECT coalesce((SELECT (extract(epoch FROM created_at) * 1000000)::bigint
		FROM voltro_cluster_config WHERE id = 1), 0)`
)

// checkTx proves that tx reaches this store's database.
func (s *Store) checkTx(ctx context.Context, tx *sql.Tx) error {
	if tx == nil {
		return store.NoTx()
	}
	var has bool
	if err := tx.QueryRowContext(ctx, sqlTxHasVoltro).Scan(&has); err != nil {
		return store.ForeignTx(store.Postgres, err)
	}
	var theirs int64
	var err error
	if has {
		err = tx.QueryRowContext(ctx, sqlTxIdentity).Scan(&theirs)
	}
	return s.txID.Check(ctx, store.Postgres, func(ctx context.Context) (string, error) {
		var own int64
		if err := s.pool.QueryRow(ctx, sqlTxIdentity).Scan(&own); err != nil {
			return "", wrapErr("read the cluster config", err)
		}
		return strconv.FormatInt(own, 10), nil
	}, strconv.FormatInt(theirs, 10), err)
}

func (s *Store) StartExecutionTx(ctx context.Context, tx *sql.Tx, q store.StartRequest) (bool, store.EnqueueResult, error) {
	if err := s.checkTx(ctx, tx); err != nil {
		return false, store.EnqueueResult{}, err
	}
	q.Claim = nil
	st, err := s.newStart(q)
	if err != nil {
		return false, store.EnqueueResult{}, err
	}
	if err := tx.QueryRowContext(ctx, st.sql(), st.args...).Scan(st.dest()...); err != nil {
		return false, store.EnqueueResult{}, wrapErr("start execution in the caller's transaction", err)
	}
	if st.created == nil {
		return true, store.EnqueueResult{}, nil
	}
	if st.queued {
		return false, store.EnqueueResult{}, nil
	}
	if st.msg.id != nil {
		q.Message.ID, q.Message.State = *st.msg.id, store.MessageState(*st.msg.state)
		return false, store.EnqueueResult{ID: *st.msg.id}, nil
	}
	res := store.EnqueueResult{Duplicate: true}
	if st.msg.dupID != nil {
		res.ID = *st.msg.dupID
	}
	return false, res, nil
}

func (s *Store) EnqueueTx(ctx context.Context, tx *sql.Tx, m *store.Message) (store.EnqueueResult, error) {
	if err := s.checkTx(ctx, tx); err != nil {
		return store.EnqueueResult{}, err
	}
	args, key, err := s.enqueueArgs(m, nil)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	var (
		res            store.EnqueueResult
		at, created    *time.Time
		state          string
		epoch          int64
		rPayload, rErr []byte
		rCreated       *time.Time
		notified       *int64
	)
	if key == nil {
		err = tx.QueryRowContext(ctx, sqlEnqueue, args...).Scan(&res.ID, &at, &state, &created, &epoch, &notified)
	} else {
		err = tx.QueryRowContext(ctx, sqlEnqueueDedupe, args...).
			Scan(&res.ID, &res.Duplicate, &at, &state, &created, &epoch, &rPayload, &rErr, &rCreated, &notified)
	}
	if errors.Is(err, sql.ErrNoRows) && key != nil {
		// The earlier message committed while our insert waited on it.
		res = store.EnqueueResult{Duplicate: true}
		err = tx.QueryRowContext(ctx, sqlDuplicate, *key).Scan(&res.ID, &rPayload, &rErr, &rCreated)
	}
	if err != nil {
		return store.EnqueueResult{}, wrapErr("enqueue in the caller's transaction", err)
	}
	if res.Duplicate {
		return res, nil
	}
	if epoch != 0 {
		return store.EnqueueResult{}, errs.New(errs.CodeInternal, "postgres: a message enqueued in the caller's transaction was claimed at insert")
	}
	m.ID, m.State = res.ID, store.MessageState(state)
	if at != nil {
		m.DeliverAt = *at
	}
	if created != nil {
		m.CreatedAt = *created
	}
	return res, nil
}
