package serve

// The engine's state as Prometheus metrics, read at scrape time: delivery
// counters, drain health per owned shard, runner ownership and lock/pool
// failures, refused runner RPCs, schedule outcomes. Instruments the code
// feeds as work happens (workflow, step, handler and schedule durations)
// live in observe.Telemetry and the same registry. The retention metrics
// are the sweeper's (internal/retention): rows deleted per table, and the
// age of the oldest row kept, reported by the instance that sweeps.

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descMessages       = desc("voltro_messages_total", "Persisted messages handled by this instance's delivery loop since start, by outcome (claimed, delivered, retried, dead, released, fenced).", "outcome")
	descInFlight       = desc("voltro_messages_in_flight", "Messages claimed by this instance and not yet finished.")
	descOwnedShards    = desc("voltro_owned_shards", "Shards this instance holds.")
	descShardOldest    = desc("voltro_shard_oldest_deliverable_seconds", "Age of the oldest deliverable message of an owned shard (0 when none waits).", "shard")
	descShardPending   = desc("voltro_shard_pending_messages", "Deliverable messages waiting on an owned shard.", "shard")
	descOldest         = desc("voltro_oldest_deliverable_seconds", "Age of the oldest deliverable message over every shard this instance holds.")
	descOldestAny      = desc("voltro_cluster_oldest_undelivered_seconds", "Age of the oldest due, undelivered message in the whole database.")
	descDead           = desc("voltro_cluster_dead_messages", "Dead letters in the whole database.")
	descUnhosted       = desc("voltro_cluster_unhosted_messages", "Deliverable messages of an entity type no live runner hosts, in the whole database (a cluster condition: see /_voltro/health/cluster).", "entity_type")
	descReady          = desc("voltro_ready", "1 when the instance is ready (pool, locks and drain healthy), else 0.")
	descProblems       = desc("voltro_readiness_problems", "Reasons the instance is not ready, by kind.", "kind")
	descOwnership      = desc("voltro_shard_ownership_changes_total", "Shards this instance acquired, lost or handed over since start.")
	descLockFailures   = desc("voltro_lock_failures_total", "Times the shard-lock connection failed (refresh, heartbeat or acquire) and every shard was dropped.")
	descLockHealthy    = desc("voltro_lock_healthy", "1 while the shard-lock connection works.")
	descPoolFailures   = desc("voltro_pool_probe_failures_total", "Failed probes of the application connection pool.")
	descPoolHealthy    = desc("voltro_pool_healthy", "1 while the application pool serves queries.")
	descRPCRefused     = desc("voltro_rpc_refused_total", "Runner RPC calls refused (bad signature or stale timestamp).")
	descRoutedStarts   = desc("voltro_workflow_routed_starts_total", "Workflow starts this instance sent to the runner holding their shard, by outcome (routed; notOwner, failed, avoided, busy: started here instead).", "outcome")
	descScheduleTicks  = desc("voltro_schedule_ticks_total", "Schedule ticks this instance recorded, by outcome (single, wonLock, lostLock, cluster, skippedOverlap, queued, missed).", "schedule", "outcome")
	descIntroDropped   = desc("voltro_workflow_introspection_dropped_total", "Workflow introspection rows dropped because the writer fell behind.")
	descRetDeleted     = desc("voltro_retention_deleted_rows_total", "Rows this instance's retention sweeper deleted since start, by table.", "table")
	descRetOldest      = desc("voltro_retention_oldest_kept_seconds", "Age of the oldest row kept of each kind (runs: finished runs by creation, processed: processed messages, dead: dead letters), as of the last pass; only the sweeping instance reports it.", "kind")
	descRetSweeping    = desc("voltro_retention_sweeping", "1 while this instance holds the retention shard (it is the one that deletes old rows), else 0.")
	collectorTimeout   = 3 * time.Second
	deliveryOutcomeSet = []string{"claimed", "delivered", "retried", "dead", "released", "fenced"}
)

type collector struct{ c Config }

// Describe sends nothing: the collector is unchecked, since its per-shard
// and per-schedule series come and go.
func (*collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads the engine now. Readiness pings the database (bounded).
func (x *collector) Collect(ch chan<- prometheus.Metric) {
	e := x.c.Engine
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	bool01 := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}

	stats, _, _, inFlight := e.Deliverer().Snapshot()
	for i, v := range []int64{stats.Claimed, stats.Delivered, stats.Retried, stats.Dead, stats.Released, stats.Fenced} {
		counter(descMessages, float64(v), deliveryOutcomeSet[i])
	}
	gauge(descInFlight, float64(inFlight))

	rs := e.Runner().Status()
	counter(descOwnership, float64(rs.OwnershipChanges))
	counter(descLockFailures, float64(rs.LockFailures))
	gauge(descLockHealthy, bool01(rs.LockHealthy))
	counter(descPoolFailures, float64(rs.PoolFailures))
	gauge(descPoolHealthy, bool01(rs.PoolHealthy))
	counter(descRPCRefused, float64(e.RPCRefused()))
	rc := e.RouteCounts()
	for outcome, v := range map[string]int64{"routed": rc.Routed, "notOwner": rc.NotOwner, "failed": rc.Failed, "avoided": rc.Avoided, "busy": rc.Busy} {
		counter(descRoutedStarts, float64(v), outcome)
	}

	ctx, cancel := context.WithTimeout(context.Background(), collectorTimeout)
	h := e.Health(ctx)
	cancel()
	gauge(descReady, bool01(h.Ready))
	kinds := map[string]int{}
	for _, p := range h.Problems {
		kinds[p.Kind]++
	}
	for k, n := range kinds {
		gauge(descProblems, float64(n), k)
	}
	gauge(descOwnedShards, float64(h.Drain.OwnedShards))
	gauge(descOldest, h.Drain.OldestDeliverableS)
	gauge(descOldestAny, h.Drain.OldestUndeliveredS)
	gauge(descDead, float64(h.Drain.Dead))
	for typ, n := range h.Drain.UnhostedBacklog {
		gauge(descUnhosted, float64(n), typ)
	}
	for _, s := range h.Drain.PerShard {
		gauge(descShardOldest, s.OldestDeliverableS, s.Shard)
		gauge(descShardPending, float64(s.Pending), s.Shard)
	}

	if x.c.Schedules != nil {
		for name, outcomes := range x.c.Schedules() {
			for o, n := range outcomes {
				counter(descScheduleTicks, float64(n), name, o)
			}
		}
	}
	if sw := e.Retention(); sw != nil {
		st := sw.Stats()
		for t, n := range st.Deleted {
			counter(descRetDeleted, float64(n), t)
		}
		sweeping := e.RetentionSweeping()
		gauge(descRetSweeping, bool01(sweeping))
		if sweeping {
			for k, age := range st.OldestAges(time.Now()) {
				gauge(descRetOldest, age.Seconds(), string(k))
			}
		}
	}
	if x.c.IntrospectionDropped != nil {
		counter(descIntroDropped, float64(x.c.IntrospectionDropped()))
	}
}
