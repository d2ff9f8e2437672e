// Package cdc assembles a change feed for one instance: the database handle
// whose writes emit deltas, the transport chosen for the dialect (PostgreSQL
// LISTEN/NOTIFY, MariaDB binlog, or in-process), subscriptions, the SSE
// endpoint, and the bodies of the `voltro watch` and `voltro bench cdc`
// commands.
package cdc
