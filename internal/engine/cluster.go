package engine

// Cluster health: conditions of the cluster as a whole, which no single
// instance can fix by leaving traffic. A backlog for an entity type that no
// live runner hosts (a typo at a start, a type a deploy removed) is the
// first: every instance would see it, so it must never turn readiness red
// (that would take every pod out of its Service at once). It is reported
// here, in inspect (drain.unhostedBacklog), in `voltro cluster status` and
// as a metric, with the way out.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/store"
)

// ClusterHealth judges the cluster now: the backlog per entity type
// against the types live runners host, read from the database.
func (e *Engine) ClusterHealth(ctx context.Context) inspect.ClusterHealth {
	h := inspect.ClusterHealth{Healthy: true, Conditions: []inspect.ClusterCondition{}, HostedTypes: []string{}, LiveRunners: []string{}, ReplicaID: e.cfg.ReplicaID}
	unknown := func(what string, err error) inspect.ClusterHealth {
		h.Healthy = false
		h.Conditions = append(h.Conditions, inspect.ClusterCondition{Kind: inspect.ConditionUnknown, Detail: fmt.Sprintf("%s failed: %v", what, err)})
		return h
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	runners, err := e.d.ListRunners(rctx)
	if err != nil {
		return unknown("reading the runners table", err)
	}
	hosted := store.HostedTypes(runners, 3*e.cfg.Heartbeat)
	for _, r := range runners {
		if r.Healthy && r.HeartbeatAge < 3*e.cfg.Heartbeat {
			h.LiveRunners = append(h.LiveRunners, r.Address)
		}
	}
	// This instance hosts what it registered, whether or not its row says
	// so yet.
	if !e.started.IsZero() {
		for _, t := range e.deliv.Types() {
			if len(hosted[t]) == 0 {
				hosted[t] = []string{e.address}
			}
		}
	}
	if len(hosted) > 0 {
		h.HostedTypes = slices.Sorted(maps.Keys(hosted))
	}
	ds, err := e.drainStats(rctx)
	if err != nil {
		return unknown("reading drain statistics", err)
	}
	h.Conditions = inspect.UnhostedConditions(ds, hosted)
	rs := e.runner.Status()
	for _, p := range slices.Sorted(maps.Keys(rs.FenceErrors)) {
		h.Conditions = append(h.Conditions, inspect.ClusterCondition{Kind: inspect.ConditionFrozenRunner, Runner: p, Detail: rs.FenceErrors[p]})
	}
	h.StaleRunners, h.PrunedRunners = rs.StaleRunners, rs.Pruned
	h.Healthy = len(h.Conditions) == 0
	return h
}
