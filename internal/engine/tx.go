package engine

// Transactional sends: a message written in the caller's own database
// transaction, and the wake-up of its owner once that transaction commits.
// PostgreSQL's NOTIFY is transactional and wakes the owner at the commit
// by itself; on MariaDB/MySQL and SQLite a goroutine waits for the commit
// (store.CommitWaiter) and wakes the owner then. Should this instance die
// first, the owner's poll finds the message.

import (
	"context"
	"database/sql"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// TxWriter is the store's transactional writer, or an error saying that
// this store keeps no SQL transactions (the memory store).
func (e *Engine) TxWriter() (store.TxWriter, error) {
	tw := e.d.Capabilities().Tx
	if tw == nil {
		return nil, errs.New(errs.CodeInvalidArgument, "the %s store has no SQL transactions: a start or send in a transaction needs PostgreSQL, MariaDB/MySQL or SQLite", e.d.Dialect())
	}
	return tw, nil
}

// SendTx persists a message in tx: it exists if and only if tx commits,
// and its owner reads it as soon as it does. Nothing is claimed at insert
// and nothing waits for a reply.
func (e *Engine) SendTx(ctx context.Context, tx *sql.Tx, in Message) (Sent, error) {
	if in.EntityType == "" || in.EntityID == "" {
		return Sent{}, errs.New(errs.CodeInvalidArgument, "a message needs an entity type and an entity id")
	}
	tw, err := e.TxWriter()
	if err != nil {
		return Sent{}, err
	}
	m := e.storeMessage(ctx, in)
	res, err := tw.EnqueueTx(ctx, tx, m)
	if err != nil {
		return Sent{}, err
	}
	if !res.Duplicate {
		e.AfterCommit(m.Shard, res.ID)
	}
	return Sent{ID: res.ID, Duplicate: res.Duplicate}, nil
}

// AfterCommit wakes the owner of shard once the transaction that inserted
// message id commits (nothing happens on a rollback). Where the store's
// NOTIFY does that at the commit, it does nothing.
func (e *Engine) AfterCommit(shard string, id int64) {
	if e.wakes {
		return
	}
	cw := e.d.Capabilities().CommitWaits
	if cw == nil {
		return
	}
	e.mu.Lock()
	if e.bg.Err() != nil { // closing: the owner will poll
		e.mu.Unlock()
		return
	}
	e.watchers.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.watchers.Done()
		committed, err := cw.AwaitCommit(e.bg, id)
		if err != nil {
			if e.bg.Err() == nil {
				e.log.Debug("waiting for a transaction's commit failed; the owner will poll", "message", id, "err", err)
			}
			return
		}
		if committed {
			e.WakeShard(shard)
		}
	}()
}
