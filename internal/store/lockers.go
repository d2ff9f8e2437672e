package store

// The parts of a Locker beyond taking and refreshing one shard: surveys,
// presence, fencing and batches.

import (
	"context"
	"time"
)

// ShardState is one shard as a survey sees it.
type ShardState struct {
	Shard string
	Owner string // ledger owner, "" if none
	Epoch int64
	// Free: nobody holds the shard right now (advisory: no session holds
	// its lock; row: no row, owner cleared, or lease expired).
	Free bool
}

// ShardSurveyor is the Locker's report, in one query, of the ledger and
// the real lock state of many shards. A ledger owner whose
// shard is free has lost its session or lease: it crashed or is cut off.
type ShardSurveyor interface {
	Survey(ctx context.Context, shards []string) ([]ShardState, error)
}

// PresenceProber is the Locker's part that, in advisory mode, holds a
// session lock naming its runner from NewLocker until Close or the end of
// its session. Absent returns the runners among those given whose
// presence lock nobody holds: no live locker session stands behind them,
// whatever their heartbeat row says (the process was killed, or its lock
// connection dropped). In row mode there is no session to probe and Absent
// returns nothing.
type PresenceProber interface {
	Absent(ctx context.Context, runners []string) ([]string, error)
	// Present reports whether this locker holds its own runner's presence
	// lock (taken at NewLocker and retried on every Heartbeat). While it
	// does not, another session stands behind the same address: an earlier
	// session of this runner not yet reaped, a frozen predecessor, or a
	// second live process with the same address. Row mode: always true.
	Present() bool
}

// Fencer is the Locker's part for locks that live in a database session
// (advisory mode). Fence ends, through the database, every session except
// the caller's own that holds runner's presence lock or the lock of one of
// shards: the way to free the locks of a runner that is frozen (a stopped
// process keeps its session, so its locks, open) once its heartbeat is
// stale. It returns how many sessions it ended. A database that refuses
// for lack of a privilege returns an errs.CodePermission error. Row mode
// has no session to end (leases expire) and returns 0.
type Fencer interface {
	Fence(ctx context.Context, runner string, shards []string) (int, error)
}

// PresenceKey is the name a runner's presence lock is derived from; no
// shard id (group "/" index) can take this form.
func PresenceKey(runner string) string { return "@runner " + runner }

// BatchLocker takes and releases many shards in a few round trips instead
// of several per shard where the store can (OneByOne where it cannot), so
// a runner
// taking over or handing over 150 shards (a restart, a failover, a join)
// does so in one pass. AcquireMany tries each shard once, without
// blocking, with Acquire's rules and effects (each shard taken gets a new
// epoch in the ledger), and returns the epochs of those it took; a shard
// another runner holds is simply absent. ReleaseMany releases each shard at
// its epoch as Release does.
type BatchLocker interface {
	AcquireMany(ctx context.Context, shards []string, ttl time.Duration) (map[string]int64, error)
	ReleaseMany(ctx context.Context, held map[string]int64) error
}

// OneByOne is the BatchLocker of a locker that has no batch statements:
// each shard is acquired or released on its own.
type OneByOne struct {
	Acquire func(ctx context.Context, shard string, ttl time.Duration) (int64, bool, error)
	Release func(ctx context.Context, shard string, epoch int64) error
}

// AcquireMany acquires each shard in turn, stopping at the first error.
func (o OneByOne) AcquireMany(ctx context.Context, shards []string, ttl time.Duration) (map[string]int64, error) {
	got := make(map[string]int64, len(shards))
	for _, sh := range shards {
		e, ok, err := o.Acquire(ctx, sh, ttl)
		if err != nil {
			return got, err
		}
		if ok {
			got[sh] = e
		}
	}
	return got, nil
}

// ReleaseMany releases each shard in turn, returning the first error after
// trying them all.
func (o OneByOne) ReleaseMany(ctx context.Context, held map[string]int64) error {
	var first error
	for sh, e := range held {
		if err := o.Release(ctx, sh, e); err != nil && first == nil {
			first = err
		}
	}
	return first
}
