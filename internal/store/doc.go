// Package store defines the one driver interface every storage backend
// implements (memory, SQLite, PostgreSQL, MariaDB/MySQL) and the value types
// that cross it. The conformance suite in storetest pins its semantics.
package store
