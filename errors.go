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

// Error codes: stable, and never reused for another meaning. Match them with
// the Err… sentinels (errors.Is) or on (*Error).Code.
const (
	CodeInvalidConfig   Code = "invalid_config"   // a bad environment value, Config field or option; New refuses to start
	CodeInvalidArgument Code = "invalid_argument" // a bad call argument: a malformed cron expression, an empty id, input that cannot be encoded
	CodeNotFound        Code = "not_found"        // no such run, message or schedule
	CodeFenced          Code = "fenced"           // a write for a shard this instance no longer owns (retried by the new owner)
	CodeUnregistered    Code = "unregistered"     // no handler registered for the entity type or workflow
	CodeDecode          Code = "decode"           // a payload, input, result or reply that does not decode into its Go type
	CodeHandlerPanic    Code = "handler_panic"    // a handler, step or workflow panicked
	CodeHandler         Code = "handler"          // a handler or step returned a plain (uncoded) error
	CodeDeadline        Code = "deadline"         // a deadline passed: a request's reply, a signal's timeout
	CodeClusterMismatch Code = "cluster_mismatch" // the shard count or groups disagree with the database's
	CodeLocked          Code = "locked"           // another engine owns the resource (a SQLite file)
	CodeUnavailable     Code = "unavailable"      // the database or a peer cannot be reached
	CodeDeadLettered    Code = "dead_lettered"    // a message exhausted its attempts
	CodeCancelled       Code = "cancelled"        // the run was cancelled
	CodeNonDeterminism  Code = "non_determinism"  // a replay diverged from the run's journal (a deploy changed the steps)
	CodeUnauthenticated Code = "unauthenticated"  // a runner or admin call without valid credentials
	CodeNotOwner        Code = "not_owner"        // this runner does not own the shard asked for
	CodeAlreadyExists   Code = "already_exists"   // a unique thing exists already
	CodePermission      Code = "permission"       // the database refused an operation for lack of a privilege
	CodeInternal        Code = "internal"         // anything else
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
	ErrAlreadyExists   = errs.ErrAlreadyExists
	ErrPermission      = errs.ErrPermission
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
