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
	"sort"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// PathClusterHealth is the cluster health route of the inspect server.
const PathClusterHealth = "/_voltro/health/cluster"

// Cluster condition kinds.
const (
	ConditionUnhostedType = "unhosted_type" // messages wait for an entity type no live runner hosts
	ConditionFrozenRunner = "frozen_runner" // a runner's heartbeat is stale, its locks held, and its session could not be ended
	ConditionUnknown      = "unknown"       // the database could not be read to judge
)

// ClusterCondition is one thing wrong with the cluster as a whole.
type ClusterCondition struct {
	Kind          string  `json:"kind"`
	EntityType    string  `json:"entityType,omitempty"`
	Runner        string  `json:"runner,omitempty"`
	Messages      int     `json:"messages,omitempty"`
	OldestSeconds float64 `json:"oldestSeconds,omitempty"`
	Detail        string  `json:"detail"`
}

// ClusterHealth is the verdict on the cluster, as one instance reads it
// from the database.
type ClusterHealth struct {
	Healthy    bool               `json:"healthy"`
	Conditions []ClusterCondition `json:"conditions"`
	// HostedTypes are the entity types live runners host; LiveRunners those
	// runners (healthy, heartbeat younger than three heartbeats).
	HostedTypes []string `json:"hostedTypes"`
	LiveRunners []string `json:"liveRunners"`
	ReplicaID   string   `json:"replicaId"` // the instance that answered
	// StaleRunners counts runner rows past heartbeat expiry, not pruned yet
	// (they are removed after 60 heartbeats); PrunedRunners how many rows
	// the answering instance removed.
	StaleRunners  int   `json:"staleRunners"`
	PrunedRunners int64 `json:"prunedRunners"`
}

// UnhostedConditions turns the backlog of every type hosted does not name
// into conditions, ordered by type.
func UnhostedConditions(ds store.DrainStats, hosted map[string][]string) []ClusterCondition {
	out := []ClusterCondition{}
	for _, tb := range ds.Types {
		if tb.Pending == 0 || len(hosted[tb.EntityType]) > 0 {
			continue
		}
		out = append(out, ClusterCondition{
			Kind: ConditionUnhostedType, EntityType: tb.EntityType, Messages: tb.Pending, OldestSeconds: tb.OldestDeliverable.Seconds(),
			Detail: fmt.Sprintf("%d message(s) for entity type %q wait and no live runner hosts that type (oldest %s); deploy a runner that registers it, or dead-letter them: voltro messages dead --type %s",
				tb.Pending, tb.EntityType, tb.OldestDeliverable.Round(time.Second), tb.EntityType),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].EntityType < out[j].EntityType })
	return out
}

// ClusterHealth judges the cluster now: the backlog per entity type
// against the types live runners host, read from the database.
func (e *Engine) ClusterHealth(ctx context.Context) ClusterHealth {
	h := ClusterHealth{Healthy: true, Conditions: []ClusterCondition{}, HostedTypes: []string{}, LiveRunners: []string{}, ReplicaID: e.cfg.ReplicaID}
	unknown := func(what string, err error) ClusterHealth {
		h.Healthy = false
		h.Conditions = append(h.Conditions, ClusterCondition{Kind: ConditionUnknown, Detail: fmt.Sprintf("%s failed: %v", what, err)})
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
	if e.runCtx != nil {
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
	h.Conditions = UnhostedConditions(ds, hosted)
	rs := e.runner.Status()
	for _, p := range slices.Sorted(maps.Keys(rs.FenceErrors)) {
		h.Conditions = append(h.Conditions, ClusterCondition{Kind: ConditionFrozenRunner, Runner: p, Detail: rs.FenceErrors[p]})
	}
	h.StaleRunners, h.PrunedRunners = rs.StaleRunners, rs.Pruned
	h.Healthy = len(h.Conditions) == 0
	return h
}
