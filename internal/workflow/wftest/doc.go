// Package wftest is the workflow conformance suite: the same behaviour
// checked on every store (memory, SQLite, PostgreSQL, MariaDB) through the
// public API.
package wftest
