// Error translation: SQLite failures that mean "storage not usable right
// now" become errs.CodeUnavailable, everything else is wrapped as is.

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/voltro/voltro/internal/errs"
)

// wrap annotates err with the operation. Nil stays nil; errors that already
// carry a voltro code and context errors keep their identity.
func (s *Store) wrap(err error, op string) error {
	if err == nil {
		return nil
	}
	var ve *errs.Error
	switch {
	case errors.As(err, &ve), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("sqlite %s: %w", op, err)
	case s != nil && s.closed.Load():
		return errs.Wrap(errs.CodeUnavailable, err, "sqlite "+op+": store is closed")
	case unavailable(err):
		return errs.Wrap(errs.CodeUnavailable, err, "sqlite "+op)
	}
	return fmt.Errorf("sqlite %s: %w", op, err)
}

// unavailable reports whether err says the database cannot be used now
// (locked, I/O failure, disk full, cannot open) rather than a bad statement.
func unavailable(err error) bool {
	if errors.Is(err, sql.ErrConnDone) {
		return true
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_READONLY,
		sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL:
		return true
	}
	return false
}

// notFound is the contract's error for a missing message.
func notFound(id int64) error {
	return errs.New(errs.CodeNotFound, "message %d not found", id)
}

// fencedErr is the contract's error for a write under a claim no longer held.
func fencedErr(id int64, state string, claimedBy string, epoch int64) error {
	return errs.New(errs.CodeFenced, "message %d: claim no longer held (state %s, claimed by %q at epoch %d)", id, state, claimedBy, epoch)
}
