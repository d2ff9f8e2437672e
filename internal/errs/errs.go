package errs

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. Codes never change meaning.
type Code string

const (
	CodeInvalidConfig   Code = "invalid_config"   // a bad environment value or option
	CodeInvalidArgument Code = "invalid_argument" // a bad call argument (malformed cron, empty id, …)
	CodeNotFound        Code = "not_found"        // no such message, workflow, schedule
	CodeFenced          Code = "fenced"           // a write for a shard whose epoch we no longer hold
	CodeUnregistered    Code = "unregistered"     // no handler registered for an entity type or workflow
	CodeDecode          Code = "decode"           // a payload that cannot be decoded
	CodeHandlerPanic    Code = "handler_panic"    // a handler panicked
	CodeHandler         Code = "handler"          // a handler returned an error
	CodeDeadline        Code = "deadline"         // a request/reply deadline passed
	CodeClusterMismatch Code = "cluster_mismatch" // shard count or groups disagree with the stored cluster config
	CodeLocked          Code = "locked"           // a resource is owned by another engine (SQLite file lock)
	CodeUnavailable     Code = "unavailable"      // storage or a peer cannot be reached
	CodeDeadLettered    Code = "dead_lettered"    // a message exhausted its attempts
	CodeCancelled       Code = "cancelled"        // a workflow was cancelled
	CodeNonDeterminism  Code = "non_determinism"  // a workflow replay diverged from its journal
	CodeUnauthenticated Code = "unauthenticated"  // runner RPC or admin call without valid credentials
	CodeNotOwner        Code = "not_owner"        // this runner does not own the shard asked for
	CodeAlreadyExists   Code = "already_exists"   // a unique thing exists already
	CodePermission      Code = "permission"       // the database refused an operation for lack of a privilege
	CodeInternal        Code = "internal"         // anything else
)

// Error is voltro's error type.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Err     error  `json:"-"`
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message != "" {
		return fmt.Sprintf("voltro %s: %s: %v", e.Code, e.Message, e.Err)
	}
	if e.Err != nil {
		return fmt.Sprintf("voltro %s: %v", e.Code, e.Err)
	}
	return fmt.Sprintf("voltro %s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches any *Error with the same code, so errors.Is(err, errs.ErrFenced)
// works on a rehydrated error whose cause chain was lost in transit.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
	}
	return false
}

// New builds an error with a code and a formatted message; a %w verb wraps.
func New(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// Wrap attaches a code and message to a cause.
func Wrap(code Code, err error, message string) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// Sentinels for errors.Is. Each matches every error of its code.
var (
	ErrInvalidConfig   = &Error{Code: CodeInvalidConfig}
	ErrInvalidArgument = &Error{Code: CodeInvalidArgument}
	ErrNotFound        = &Error{Code: CodeNotFound}
	ErrFenced          = &Error{Code: CodeFenced}
	ErrUnregistered    = &Error{Code: CodeUnregistered}
	ErrDecode          = &Error{Code: CodeDecode}
	ErrHandlerPanic    = &Error{Code: CodeHandlerPanic}
	ErrHandler         = &Error{Code: CodeHandler}
	ErrDeadline        = &Error{Code: CodeDeadline}
	ErrClusterMismatch = &Error{Code: CodeClusterMismatch}
	ErrLocked          = &Error{Code: CodeLocked}
	ErrUnavailable     = &Error{Code: CodeUnavailable}
	ErrDeadLettered    = &Error{Code: CodeDeadLettered}
	ErrCancelled       = &Error{Code: CodeCancelled}
	ErrNonDeterminism  = &Error{Code: CodeNonDeterminism}
	ErrUnauthenticated = &Error{Code: CodeUnauthenticated}
	ErrNotOwner        = &Error{Code: CodeNotOwner}
	ErrAlreadyExists   = &Error{Code: CodeAlreadyExists}
	ErrPermission      = &Error{Code: CodePermission}
)

// Encode turns any error into JSON that Decode turns back into an *Error with
// the same code and message. A non-voltro error is encoded as CodeHandler.
func Encode(err error) []byte {
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: CodeHandler, Message: err.Error()}
	}
	msg := e.Message
	if msg == "" || e.Err != nil {
		msg = e.Error()
		// keep the human message without the "voltro code:" prefix twice
		if e.Message != "" && e.Err != nil {
			msg = e.Message + ": " + e.Err.Error()
		} else if e.Err != nil {
			msg = e.Err.Error()
		}
	}
	b, _ := json.Marshal(Error{Code: e.Code, Message: msg})
	return b
}

// Decode is the inverse of Encode. Bytes that are not an encoded error become
// a CodeHandler error carrying them as text.
func Decode(b []byte) *Error {
	if len(b) == 0 {
		return nil
	}
	var e Error
	if err := json.Unmarshal(b, &e); err != nil || e.Code == "" {
		return &Error{Code: CodeHandler, Message: string(b)}
	}
	return &e
}
