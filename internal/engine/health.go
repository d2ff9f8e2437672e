package engine

// Health that tells the truth: readiness is the pool ping, the shard locks,
// and drain health — whether messages that can be delivered are being
// delivered. A process that is alive but not draining is not ready.
// Readiness judges only what taking this instance out of traffic can fix;
// what the cluster as a whole lacks is in cluster.go.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/store"
)

// healthDBWait bounds the database calls of one readiness evaluation.
const healthDBWait = 2 * time.Second

type drainCache struct {
	at    time.Time
	stats store.DrainStats
	err   error
}

// stallAfter is how old a deliverable message on an owned shard may get
// before the shard counts as stalled.
func (e *Engine) stallAfter() time.Duration {
	return max(3*e.pollInterval(), 3*e.cfg.Heartbeat, 5*time.Second)
}

func (e *Engine) drainStats(ctx context.Context) (store.DrainStats, error) {
	e.mu.Lock()
	c := e.drain
	e.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < min(e.cfg.Heartbeat, 5*time.Second) {
		return c.stats, c.err
	}
	st, err := e.d.DrainStats(ctx)
	e.mu.Lock()
	e.drain = drainCache{at: time.Now(), stats: st, err: err}
	e.mu.Unlock()
	return st, err
}

// Health evaluates readiness now.
func (e *Engine) Health(ctx context.Context) inspect.Health {
	h := inspect.Health{Ready: true}
	bad := func(kind, format string, args ...any) {
		h.Ready = false
		h.Problems = append(h.Problems, inspect.Problem{Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	// The two database calls run side by side, each bounded, so that a
	// database that does not answer (a paused node) costs a probe at most
	// healthDBWait, not the sum.
	dctx, cancel := context.WithTimeout(ctx, healthDBWait)
	defer cancel()
	drained := make(chan struct{})
	var ds store.DrainStats
	var dsErr error
	go func() {
		defer close(drained)
		ds, dsErr = e.drainStats(dctx)
	}()
	if err := e.d.Ping(dctx); err != nil {
		bad(inspect.ProblemDatabase, "database ping failed: %v", err)
	}
	rs := e.runner.Status()
	if rs.PassBusy > e.cfg.Heartbeat {
		bad(inspect.ProblemLocks, "the runner has waited %s on the database (heartbeat, lock refresh or acquisition)", rs.PassBusy.Round(time.Millisecond))
	}
	if !rs.PoolHealthy {
		bad(inspect.ProblemPool, "connection pool has not served a query since %s (%s): shards released", rs.PoolLastOK.Format(time.RFC3339), rs.PoolError)
	}
	if !rs.LockHealthy && e.started.Before(time.Now().Add(-2*time.Second)) {
		bad(inspect.ProblemLocks, "shard lock storage unhealthy: %s", orUnknown(rs.LockError))
	}
	if rs.Refused != "" {
		bad(inspect.ProblemIdentity, "%s", rs.Refused)
	}
	for _, tw := range rs.EarlierTwins {
		bad(inspect.ProblemIdentity, "replica id %s (POD_NAME) is also the live instance at runner %s, which started first (%s): this later instance is not ready until one of them has another POD_NAME",
			e.cfg.ReplicaID, tw.Address, tw.StartedAt.UTC().Format(time.RFC3339))
	}
	for _, p := range slices.Sorted(maps.Keys(rs.FenceErrors)) {
		h.Notes = append(h.Notes, inspect.Problem{Kind: inspect.ConditionFrozenRunner, Detail: rs.FenceErrors[p]})
	}
	stats, lastLoop, loopErr, inFlight := e.deliv.Snapshot()
	d := inspect.Drain{
		OwnedShards: len(rs.Held), InFlight: inFlight, ReadLoopError: loopErr,
		Counters: map[string]int64{"claimed": stats.Claimed, "delivered": stats.Delivered, "retried": stats.Retried, "dead": stats.Dead, "released": stats.Released, "fenced": stats.Fenced},
	}
	if !lastLoop.IsZero() {
		d.LastReadLoopAgoS = time.Since(lastLoop).Seconds()
	}
	if !e.started.IsZero() && time.Since(e.started) > e.stallAfter() && (lastLoop.IsZero() || time.Since(lastLoop) > e.stallAfter()+e.pollInterval()) {
		bad(inspect.ProblemReadLoop, "read loop has not run for %s", time.Since(lastLoop).Round(time.Second))
	}
	<-drained
	if dsErr != nil {
		bad(inspect.ProblemDatabase, "reading drain statistics failed: %v", dsErr)
	} else {
		d.Dead = ds.Dead
		d.OldestUndeliveredS = ds.OldestUndelivered.Seconds()
		// A backlog no live runner hosts is shown, never judged here: taking
		// this instance out of traffic would not drain it (see ClusterHealth).
		live := rs.LiveTypes
		for _, tb := range ds.Types {
			if !live[tb.EntityType] {
				if d.UnhostedBacklog == nil {
					d.UnhostedBacklog = map[string]int{}
				}
				d.UnhostedBacklog[tb.EntityType] = tb.Pending
			}
		}
		mine := e.deliv.Types()
		for _, sd := range ds.Shards {
			epoch, ok := rs.Held[sd.Shard]
			if !ok {
				continue
			}
			d.Pending += sd.Pending
			d.Claimed += sd.Claimed
			d.OldestDeliverableS = max(d.OldestDeliverableS, sd.OldestDeliverable.Seconds())
			d.PerShard = append(d.PerShard, inspect.ShardDrainView{Shard: sd.Shard, Epoch: epoch, Pending: sd.Pending, Claimed: sd.Claimed, OldestDeliverableS: sd.OldestDeliverable.Seconds()})
			// Stalled only by what this runner can deliver: a message of a
			// type it does not host is not its drain's to judge.
			if oldestOf(sd.Types, mine) > e.stallAfter() {
				d.StalledShards = append(d.StalledShards, sd.Shard)
			}
		}
		if len(d.StalledShards) > 0 {
			bad(inspect.ProblemStalledShard, "%d owned shard(s) have deliverable messages older than %s: %v", len(d.StalledShards), e.stallAfter(), firstN(d.StalledShards, 5))
		}
	}
	for s, since := range rs.Unacquired {
		if since > 3*e.cfg.Heartbeat {
			d.UnacquiredShards = append(d.UnacquiredShards, s)
		}
	}
	sort.Strings(d.UnacquiredShards)
	if len(d.UnacquiredShards) > 0 {
		bad(inspect.ProblemUnacquired, "%d shard(s) assigned to this runner could not be acquired for over %s: %v", len(d.UnacquiredShards), 3*e.cfg.Heartbeat, firstN(d.UnacquiredShards, 5))
	}
	h.Drain = d
	return h
}

// oldestOf is the oldest deliverable age among the backlogs of types.
func oldestOf(backlogs []store.TypeBacklog, types []string) time.Duration {
	var old time.Duration
	for _, tb := range backlogs {
		if tb.Pending > 0 && slices.Contains(types, tb.EntityType) {
			old = max(old, tb.OldestDeliverable)
		}
	}
	return old
}

func orUnknown(s string) string {
	if s == "" {
		return "no locker yet"
	}
	return s
}

func firstN(s []string, n int) []string {
	s = slices.Clone(s)
	if len(s) > n {
		return append(s[:n], fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}
