// Error classification: which server and network errors mean "the database
// cannot be reached" (errs.CodeUnavailable), which mean "run it again"
// (deadlock, Galera certification conflict, lock wait timeout), and which
// are a duplicate key.

package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/voltro/voltro/internal/errs"
)

const (
	errDupEntry        = 1062
	errLockWaitTimeout = 1205
	errDeadlock        = 1213 // also Galera's certification failure
	errWsrepNotReady   = 1047 // Galera node without quorum
	errServerShutdown  = 1053
	errTooManyConns    = 1040
	errConnKilled      = 1927
	errQueryKilled     = 1317
)

func serverErrno(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// retryable: the transaction was rolled back (1213) or the statement gave up
// waiting for a lock (1205); running the whole unit again is correct.
func retryable(err error) bool {
	n := serverErrno(err)
	return n == errDeadlock || n == errLockWaitTimeout
}

func isDuplicate(err error) bool { return serverErrno(err) == errDupEntry }

// unavailable reports errors that say the server cannot serve us now.
func unavailable(err error) bool {
	switch serverErrno(err) {
	case errWsrepNotReady, errServerShutdown, errTooManyConns, errConnKilled:
		return true
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// wrapErr adds what the store was doing; an outage gets errs.CodeUnavailable,
// a voltro error and a cancelled context pass through with context added.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var ve *errs.Error
	if errors.As(err, &ve) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("mysql store: %s: %w", op, err)
	}
	if unavailable(err) {
		return errs.Wrap(errs.CodeUnavailable, err, "mysql store: "+op)
	}
	return fmt.Errorf("mysql store: %s: %w", op, err)
}
