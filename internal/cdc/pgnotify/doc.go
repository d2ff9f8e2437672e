// Package pgnotify is the PostgreSQL change feed: row triggers on subscribed
// tables publish the table, operation and primary key of each change with
// pg_notify on one channel, and a dedicated listening connection re-reads
// the rows with the application's privileges and turns them into deltas.
// No row image ever goes out: any role that can connect may LISTEN.
package pgnotify
