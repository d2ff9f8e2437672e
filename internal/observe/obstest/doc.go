// Package obstest is shared plumbing for the observability tests: apps on a
// real database, several side by side in one process, and plain HTTP calls
// to their inspect servers.
package obstest
