package errs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	// Causes are the errors this one wrapped when it was encoded,
	// flattened: errors.Is still finds them after the error crossed a
	// journal, a child run or a process (see Is).
	Causes []Cause `json:"causes,omitempty"`
	Err    error   `json:"-"`
}

// Cause is one wrapped error as Encode keeps it: a voltro error's code and
// message, or a plain error's text (Code "").
type Cause struct {
	Code    Code   `json:"code,omitempty"`
	Message string `json:"message"`
}

// maxCauses bounds what Encode keeps of a deep error tree.
const maxCauses = 16

func (e *Error) Error() string {
	return fmt.Sprintf("voltro %s: %s", e.Code, e.text())
}

// text is the message and the cause, once: New with %w has the cause's text
// in its message already.
func (e *Error) text() string {
	switch {
	case e.Err == nil:
		return e.Message
	case e.Message == "":
		return e.Err.Error()
	case strings.HasSuffix(e.Message, e.Err.Error()):
		return e.Message
	}
	return e.Message + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Is keeps an error's identity across a journal or a process, where only
// its encoding travels. A target *Error matches an error, or a recorded
// cause, of its code, and of its message unless the target has none: so
// errors.Is(err, errs.ErrFenced) matches every fenced error, and a sentinel
// made with New(Code("out_of_stock"), "out of stock") matches itself after
// decoding. Any other target (a plain errors.New sentinel) matches by its
// text: the message of a handler-coded error (what a plain error becomes),
// or a recorded plain cause.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		if t.Code == e.Code && (t.Message == "" || t.Message == e.Message) {
			return true
		}
		for _, c := range e.Causes {
			if c.Code == t.Code && (t.Message == "" || t.Message == c.Message) {
				return true
			}
		}
		return false
	}
	text := target.Error()
	if text == "" {
		return false
	}
	if e.Code == CodeHandler && e.Message == text {
		return true
	}
	for _, c := range e.Causes {
		if c.Code == "" && c.Message == text {
			return true
		}
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
	msg := e.text()
	if msg == "" {
		msg = e.Error()
	}
	b, _ := json.Marshal(Error{Code: e.Code, Message: msg, Causes: causes(err, e)})
	return b
}

// causes flattens the tree of err below what the encoded code and message
// say: every voltro error's code and message (with the causes it carried
// in), and every plain error's text, in depth-first order, without repeats.
func causes(err error, top *Error) []Cause {
	var out []Cause
	seen := map[Cause]bool{{Code: top.Code, Message: top.Message}: true}
	add := func(c Cause) {
		if !seen[c] && len(out) < maxCauses {
			seen[c] = true
			out = append(out, c)
		}
	}
	var walk func(error)
	walk = func(n error) {
		if n == nil || len(out) >= maxCauses {
			return
		}
		if m := mirrored(n); m != nil {
			n = m // a voltro.Error: the Error it stands for
		}
		switch v := n.(type) {
		case *Error:
			if v != top {
				add(Cause{Code: v.Code, Message: v.Message})
			}
			for _, c := range v.Causes {
				add(c)
			}
			walk(v.Err)
			return
		case interface{ Unwrap() []error }:
			if n != err || top.Code != CodeHandler || top.Message != n.Error() {
				add(Cause{Message: n.Error()})
			}
			for _, x := range v.Unwrap() {
				walk(x)
			}
			return
		}
		if n != err || top.Code != CodeHandler || top.Message != n.Error() {
			add(Cause{Message: n.Error()})
		}
		walk(errors.Unwrap(n))
	}
	walk(err)
	return out
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
