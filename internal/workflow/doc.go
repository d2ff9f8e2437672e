// Package workflow runs durable workflows on the cluster engine. A run is an
// entity of type workflow/<name> whose id is the execution id; its messages
// (start, timer, signal, child finished, cancel) are delivered by whichever
// runner owns its shard, which replays the code against the run's journal.
// A waiting run holds no goroutine: it is rows until a message wakes it.
package workflow
