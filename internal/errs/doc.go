// Package errs holds voltro's one error type: a stable code plus a message and
// an optional wrapped cause. Codes survive serialization, so an error that
// crossed a process boundary (a journaled step, a reply from another runner)
// still matches errors.Is against the sentinel of its code.
package errs
