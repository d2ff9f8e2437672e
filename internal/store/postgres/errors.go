// Error mapping: connection-level failures become errs.CodeUnavailable, the
// rest keep their cause wrapped with the operation name.

package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/voltro/voltro/internal/errs"
)

// wrapErr names op in err and marks connection failures as unavailable.
// voltro errors pass through unchanged.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var ve *errs.Error
	if errors.As(err, &ve) {
		return err
	}
	err = tidyConnectError(err)
	if isConnErr(err) {
		return errs.Wrap(errs.CodeUnavailable, err, "postgres "+op)
	}
	return fmt.Errorf("postgres %s: %w", op, err)
}

// connectError is a pgconn.ConnectError (kept for errors.As) with a message
// that names each failed attempt once.
type connectError struct {
	msg string
	err error
}

func (e *connectError) Error() string { return e.msg }
func (e *connectError) Unwrap() error { return e.err }

// tidyConnectError drops repeated attempt lines from a failed connect: with
// the default sslmode=prefer pgx dials each host twice (TLS, then plain), and
// a wrong port fails both the same way, so the dial line was printed twice.
// A single remaining attempt goes on the first line.
func tidyConnectError(err error) error {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return err
	}
	text := err.Error()
	lines := strings.Split(text, "\n")
	kept := lines[:1]
	seen := map[string]bool{}
	for _, l := range lines[1:] {
		if k := strings.TrimSpace(l); !seen[k] {
			seen[k] = true
			kept = append(kept, l)
		}
	}
	msg := strings.Join(kept, "\n")
	if len(kept) == 2 && strings.HasSuffix(kept[0], ":") {
		msg = kept[0] + " " + strings.TrimSpace(kept[1])
	}
	if msg == text {
		return err
	}
	return &connectError{msg: msg, err: err}
}

// isConnErr reports whether err says the server or the connection is gone,
// as opposed to a statement-level error on a working connection.
func isConnErr(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // admin/crash shutdown, cannot connect now
			return true
		case pgErr.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") || strings.Contains(msg, "connection reset")
}

// fencedOrMissing builds the error of a fenced write on message id, telling a
// missing message from a claim that is no longer ours.
func fencedOrMissing(id int64, found bool, state, claimedBy string, epoch int64) error {
	if !found {
		return errs.New(errs.CodeNotFound, "message %d not found", id)
	}
	return errs.New(errs.CodeFenced, "message %d: claim no longer held (state %s, claimed by %q at epoch %d)", id, state, claimedBy, epoch)
}
