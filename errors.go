package voltro

// voltro's error type and its stable codes: the public mirror of the
// engine's (internal/errs), so go doc shows them, and errors.Is and
// errors.As work across the two.

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
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Causes are the errors this one wrapped when it crossed a journal, a
	// child run or a process, flattened (the code and message of a voltro
	// error, the text of a plain one, with Code ""): errors.Is still
	// finds them there. Empty on an error that crossed nothing.
	Causes []Cause `json:"causes,omitempty"`
	// Err is the error this one wraps in this process (NewError's %w), or
	// nil. It does not cross a journal or a process: Causes does.
	Err error `json:"-"`
}

// Cause is one error an Error wrapped when it crossed a journal or a
// process: a voltro error's code and message, or a plain error's text
// (Code "").
type Cause struct {
	Code    Code   `json:"code,omitempty"`
	Message string `json:"message"`
}

// Code is a stable error code: one of the Code… constants, or your own
// (voltro.Code("out_of_stock")) for NewError.
type Code string

// engine is the engine's form of e, which does the work of each method.
func (e *Error) engine() *errs.Error {
	x := &errs.Error{Code: errs.Code(e.Code), Message: e.Message, Err: e.Err}
	for _, c := range e.Causes {
		x.Causes = append(x.Causes, errs.Cause{Code: errs.Code(c.Code), Message: c.Message})
	}
	return x
}

// Error is "voltro CODE: message", with the wrapped error's text unless
// the message has it already.
func (e *Error) Error() string { return e.engine().Error() }

// Unwrap returns Err, so errors.Is and errors.As look into what NewError's
// %w wrapped.
func (e *Error) Unwrap() error { return e.Err }

// Is implements the matching described on Error, for errors.Is: a target
// *Error by code (and message, if the target has one) against this error
// and its Causes; any other target by text.
func (e *Error) Is(target error) bool { return e.engine().Is(target) }

// As lets the engine read an error you return (from a step, a handler or a
// child) as its own, so its code and causes are journaled with it; you do
// not call it. errors.As to a *Error needs no method: it is the type.
func (e *Error) As(target any) bool {
	if p, ok := target.(**errs.Error); ok && p != nil {
		*p = e.engine()
		return true
	}
	return false
}

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
// that code, also one that crossed a process boundary. Each is the *Error of
// its code with no message.
var (
	ErrInvalidConfig   = &Error{Code: CodeInvalidConfig}   // matches CodeInvalidConfig
	ErrInvalidArgument = &Error{Code: CodeInvalidArgument} // matches CodeInvalidArgument
	ErrNotFound        = &Error{Code: CodeNotFound}        // matches CodeNotFound
	ErrFenced          = &Error{Code: CodeFenced}          // matches CodeFenced
	ErrUnregistered    = &Error{Code: CodeUnregistered}    // matches CodeUnregistered
	ErrDecode          = &Error{Code: CodeDecode}          // matches CodeDecode
	ErrHandlerPanic    = &Error{Code: CodeHandlerPanic}    // matches CodeHandlerPanic
	ErrHandler         = &Error{Code: CodeHandler}         // matches CodeHandler
	ErrDeadline        = &Error{Code: CodeDeadline}        // matches CodeDeadline
	ErrClusterMismatch = &Error{Code: CodeClusterMismatch} // matches CodeClusterMismatch
	ErrLocked          = &Error{Code: CodeLocked}          // matches CodeLocked
	ErrUnavailable     = &Error{Code: CodeUnavailable}     // matches CodeUnavailable
	ErrDeadLettered    = &Error{Code: CodeDeadLettered}    // matches CodeDeadLettered
	ErrCancelled       = &Error{Code: CodeCancelled}       // matches CodeCancelled
	ErrNonDeterminism  = &Error{Code: CodeNonDeterminism}  // matches CodeNonDeterminism
	ErrUnauthenticated = &Error{Code: CodeUnauthenticated} // matches CodeUnauthenticated
	ErrNotOwner        = &Error{Code: CodeNotOwner}        // matches CodeNotOwner
	ErrAlreadyExists   = &Error{Code: CodeAlreadyExists}   // matches CodeAlreadyExists
	ErrPermission      = &Error{Code: CodePermission}      // matches CodePermission
)

// NewError builds a coded error whose identity survives steps, children,
// entity replies and restarts (see Error): declare your sentinels with it,
// e.g. var ErrOutOfStock = voltro.NewError("out_of_stock", "out of stock").
// Use codes of your own (lower_snake_case) for your errors; the Code…
// constants are voltro's. The format's %w wraps, as with fmt.Errorf.
func NewError(code Code, format string, args ...any) error {
	x := errs.New(errs.Code(code), format, args...)
	return &Error{Code: code, Message: x.Message, Err: x.Err}
}

// Permanent marks a handler error that retrying cannot fix: it becomes the
// final reply at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &delivery.Permanent{Err: err}
}

// mirrorOf is e as an *Error (nil for nil).
func mirrorOf(e *errs.Error) *Error {
	var p *Error
	if e == nil || !e.As(&p) {
		return nil
	}
	return p
}
