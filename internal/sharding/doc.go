// Package sharding maps entity ids to shards and proposes which live runner
// should own each shard. The proposal is only that: a runner acts for a shard
// only while it holds the shard's lock.
package sharding
