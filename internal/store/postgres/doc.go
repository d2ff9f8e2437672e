// Package postgres is the PostgreSQL store driver: the cluster tables, shard
// locks on a reserved connection (session advisory locks or row leases),
// persisted messages with fenced claims, and LISTEN/NOTIFY wake-ups.
package postgres
