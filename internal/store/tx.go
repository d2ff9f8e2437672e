package store

// Writes inside the caller's own transaction: a workflow start or a message
// that exists if and only if the application's transaction commits, and the
// ways an instance learns of that commit at once.

import (
	"context"
	"database/sql"
	"sync"

	"github.com/voltro/voltro/internal/errs"
)

// TxWriter is implemented by the SQL stores. Each method first proves that
// tx reaches this store's database (it reads the cluster config row through
// tx and compares it with the store's own); a transaction on another
// database, or on one without voltro's tables, gets an
// errs.CodeInvalidArgument error and nothing is written. Nothing is claimed
// at insert (the message is not visible to anyone until the commit), and
// nothing is written outside tx.
type TxWriter interface {
	// StartExecutionTx is StartExecution inside tx, claim ignored:
	// existing=true when a run with the id is there already (then nothing
	// is written). res.ID is the start message's id; res.Duplicate when a
	// message held its dedupe key.
	StartExecutionTx(ctx context.Context, tx *sql.Tx, q StartRequest) (existing bool, res EnqueueResult, err error)
	// EnqueueTx is Enqueue inside tx, never claimed at insert. A repeated
	// dedupe key writes nothing and reports Duplicate with the earlier
	// message's id (no reply is read).
	EnqueueTx(ctx context.Context, tx *sql.Tx, m *Message) (EnqueueResult, error)
}

// CommitWaiter is implemented by the SQL stores whose writes do not wake
// the shard owner by themselves at commit (PostgreSQL's NOTIFY does).
// AwaitCommit returns once the transaction that inserted message id has
// ended, reporting whether the message is there (committed), or ctx ends.
// A store may give up early (committed=false) when it cannot tell: the
// owner's poll then finds the message.
type CommitWaiter interface {
	AwaitCommit(ctx context.Context, id int64) (committed bool, err error)
}

// TxIdentity caches a store's own database identity (a value of its
// cluster config row) and checks another transaction's against it.
type TxIdentity struct {
	mu  sync.Mutex
	own string
}

// Check compares theirs (read through the caller's transaction; readErr is
// that read's error) with the store's own identity, read once with own.
func (c *TxIdentity) Check(ctx context.Context, d Dialect, own func(ctx context.Context) (string, error), theirs string, readErr error) error {
	if readErr != nil {
		return ForeignTx(d, readErr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.own == "" {
		v, err := own(ctx)
		if err != nil {
			return err
		}
		c.own = v
	}
	if theirs == "" || theirs != c.own {
		return ForeignTx(d, nil)
	}
	return nil
}

// ForeignTx is the error for a transaction that does not reach the store's
// database; cause is what reading through it said, if anything.
func ForeignTx(d Dialect, cause error) error {
	msg := "the transaction is not on this " + string(d) + " store's database (open it on the App's DB() or on a pool of the same database URL)"
	if cause != nil {
		return errs.Wrap(errs.CodeInvalidArgument, cause, msg)
	}
	return errs.New(errs.CodeInvalidArgument, "%s", msg)
}

// NoTx is the error for a nil transaction.
func NoTx() error {
	return errs.New(errs.CodeInvalidArgument, "no transaction: pass the *sql.Tx the write belongs to")
}
