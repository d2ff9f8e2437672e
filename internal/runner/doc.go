// Package runner is cluster membership: it registers this process, keeps its
// heartbeat, proposes shard owners from the live set and takes, refreshes and
// hands over shard locks. It tells the delivery side, through Callbacks, when
// a shard is gained or lost. It also watches the application pool and steps
// out of the cluster while the pool serves nothing.
package runner
