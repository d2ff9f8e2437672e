// Package sqlite is the store driver for a SQLite database file, built on the
// pure-Go modernc.org/sqlite driver. A SQLite store serves one executing
// engine: shard ownership uses row leases only, and the ownership guard in
// ownership.go keeps a second engine off the same file.
//
// Connections: the store's own writes go through a single write connection
// (writes queue in Go rather than spinning on SQLite's busy handler), reads
// and DB() use a small pool. Every connection runs in WAL mode with
// synchronous=NORMAL, foreign keys on and a busy timeout, and opens explicit
// transactions with BEGIN IMMEDIATE, so a transaction never has to upgrade a
// read lock to a write lock (the one case a busy timeout cannot cure).
package sqlite
