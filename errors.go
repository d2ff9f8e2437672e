package voltro

// voltro's one error type and its stable codes, re-exported from the
// internal package so callers can match with errors.Is and errors.As.

import (
	"github.com/voltro/voltro/internal/delivery"
	"github.com/voltro/voltro/internal/errs"
)

// Error is every error voltro returns with a code; errors.As(err, &*Error).
type Error = errs.Error

// Code is a stable error code.
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

// NewError builds a coded error, e.g. for a handler's Permanent reply.
func NewError(code Code, format string, args ...any) error { return errs.New(code, format, args...) }

// Permanent marks a handler error that retrying cannot fix: it becomes the
// final reply at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &delivery.Permanent{Err: err}
}
