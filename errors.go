package voltro

// voltro's one error type and its stable codes, re-exported from the
// internal package so callers can match with errors.Is and errors.As.

import (
	"github.com/voltro/voltro/internal/delivery"
	"github.com/voltro/voltro/internal/errs"
)

// Error is every error voltro returns with a code: errors.As(err, &e) with
// e a *Error gives its Code and Message. An error that crossed a journal, a
// child run, an entity reply or a process is an *Error rebuilt from its
// encoding: its Code, its Message and its Causes (the code and message of
// each voltro error it wrapped, the text of each plain one).
//
// Identity survives that crossing, so errors.Is works on a step's error in
// workflow code (also on a replay in another process), on a child's error
// in its parent, on a run's result and on an entity's reply:
//
//   - a target made with NewError (or one of the Err… sentinels) matches an
//     error, or a wrapped cause, of its code, and of its message unless the
//     target has none: declare var ErrOutOfStock = voltro.NewError(
//     "out_of_stock", "out of stock") and return it, or wrap it with
//     fmt.Errorf("sku %s: %w", sku, ErrOutOfStock) to add detail;
//   - any other target, such as errors.New("out of stock"), matches by its
//     text: the message of a plain error returned as is (code handler), or
//     a wrapped cause with that text. Two plain errors with the same text
//     are the same error here; give distinct sentinels distinct texts, or
//     codes.
//
// errors.As to your own error types does not survive a crossing: carry what
// the caller needs in a code.
type Error = errs.Error

// Code is a stable error code: one of the Code… constants, or your own
// (voltro.Code("out_of_stock")) for NewError.
type Code = errs.Code

// Error codes.
const (
	CodeInvalidConfig   = errs.CodeInvalidConfig
	CodeInvalidArgument = errs.CodeInvalidArgument
	CodeNotFound        = errs.CodeNotFound
	CodeFenced          = errs.CodeFenced
	CodeUnregistered    = errs.CodeUnregistered
	CodeDecode          = errs.CodeDecode
	CodeHandlerPanic    = errs.CodeHandlerPanic
	CodeHandler         = errs.CodeHandler
	CodeDeadline        = errs.CodeDeadline
	CodeClusterMismatch = errs.CodeClusterMismatch
	CodeLocked          = errs.CodeLocked
	CodeUnavailable     = errs.CodeUnavailable
	CodeDeadLettered    = errs.CodeDeadLettered
	CodeCancelled       = errs.CodeCancelled
	CodeNonDeterminism  = errs.CodeNonDeterminism
	CodeUnauthenticated = errs.CodeUnauthenticated
	CodeNotOwner        = errs.CodeNotOwner
)

// Sentinels: errors.Is(err, voltro.ErrDeadLettered) matches every error of
// that code, also one that crossed a process boundary.
var (
	ErrInvalidConfig   = errs.ErrInvalidConfig
	ErrInvalidArgument = errs.ErrInvalidArgument
	ErrNotFound        = errs.ErrNotFound
	ErrFenced          = errs.ErrFenced
	ErrUnregistered    = errs.ErrUnregistered
	ErrDecode          = errs.ErrDecode
	ErrHandlerPanic    = errs.ErrHandlerPanic
	ErrHandler         = errs.ErrHandler
	ErrDeadline        = errs.ErrDeadline
	ErrClusterMismatch = errs.ErrClusterMismatch
	ErrLocked          = errs.ErrLocked
	ErrUnavailable     = errs.ErrUnavailable
	ErrDeadLettered    = errs.ErrDeadLettered
	ErrCancelled       = errs.ErrCancelled
	ErrNonDeterminism  = errs.ErrNonDeterminism
	ErrUnauthenticated = errs.ErrUnauthenticated
	ErrNotOwner        = errs.ErrNotOwner
)

// NewError builds a coded error whose identity survives steps, children,
// entity replies and restarts (see Error): declare your sentinels with it,
// e.g. var ErrOutOfStock = voltro.NewError("out_of_stock", "out of stock").
// Use codes of your own (lower_snake_case) for your errors; the Code…
// constants are voltro's. The format's %w wraps, as with fmt.Errorf.
func NewError(code Code, format string, args ...any) error { return errs.New(code, format, args...) }

// Permanent marks a handler error that retrying cannot fix: it becomes the
// final reply at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &delivery.Permanent{Err: err}
}
