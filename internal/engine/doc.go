// Package engine composes one voltro instance: the store, the runner
// (membership and shard locks), the delivery loop, runner RPC, wake-ups, and
// the health and inspect endpoints. The public voltro package is a typed
// surface over it.
package engine
