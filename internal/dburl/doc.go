// Package dburl resolves a connection URL (or DB_DIALECT) to a dialect and the
// driver-specific connection string.
package dburl
