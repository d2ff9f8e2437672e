// Package sqlwrite builds and runs the single-row writes of the change data
// API (insert, update and delete by key) on every SQL dialect, returning the
// rows before and after so the caller can publish a delta. It is a thin layer
// over database/sql, not an ORM: one table, one row, one key.
package sqlwrite
