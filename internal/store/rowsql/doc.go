// Package rowsql builds and runs the single-row writes and reads of the
// change data API (internal/cdc: insert, update and delete by key, re-read
// by key, primary-key discovery), returning the rows before and after so
// the caller can publish a delta. It is a thin layer over database/sql, not
// an ORM: one table, one row, one key. What differs between databases is a
// Dialect, which each store package defines in its changefeed.go and
// registers; internal/cdc asks For the dialect it resolved. Nothing here
// retries: the writes run in the caller's transaction (or autocommit on the
// caller's behalf), which only the caller can run again; errors come back
// wrapped with the table and the write.
package rowsql
