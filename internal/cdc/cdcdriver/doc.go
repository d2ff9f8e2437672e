// Package cdcdriver is where the driver packages register the change
// feed's database-specific transports, as database/sql drivers register
// themselves: PostgreSQL's LISTEN/NOTIFY (driver/postgres) and MariaDB's
// binlog reader (driver/mysql). Package cdc itself links neither pgx nor
// the binlog parser; a program gets a transport by importing its driver.
//
// The row SQL of the data API is registered the same way, by the store
// packages (store/rowsql).
package cdcdriver
