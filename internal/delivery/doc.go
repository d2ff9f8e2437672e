// Package delivery is the read loop: it claims deliverable messages of the
// shards this runner holds and the entity types it has registered, hands them
// to per-entity mailboxes, and writes each outcome (reply, retry, dead letter)
// fenced by the shard epoch. Every message it does not deliver is released at
// once, so nothing stays claimed and undelivered.
package delivery
