// Package mysql is the MariaDB/MySQL store: the store.Driver contract on
// InnoDB tables, with shard ownership by GET_LOCK (advisory) or by a
// conditional upsert of a lease row (row, the mode Galera needs).
//
// Every time that matters is the database's own clock (UTC_TIMESTAMP(6));
// sessions run with time_zone '+00:00' and DATETIME(6) columns hold UTC.
// Tests replace that clock with Options.Clock (see internal/store/sqlclock).
// Open connects and probes the server; Migrate creates the tables.
package mysql
