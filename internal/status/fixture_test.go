package status_test

// A fixed report for the golden and schema tests: every kind of row (ready,
// localhost, stale and unreachable, not ready, MariaDB with a binlog
// server_id, inline-only, a dead row whose inspect address another instance
// answers, two instances sharing one POD_NAME, a change feed that fell back
// to inline emit, an instance the inspect token was withheld from) and a
// full footer.

import (
	"time"

	"github.com/voltro/voltro/internal/status"
)

func ptr[T any](v T) *T { return &v }

func fixtureReport() *status.Report {
	r := fixtureInstances()
	// api-0 sweeps; worker-0 is set otherwise
	r.Instances[0].Retention = &status.InstanceRetention{Runs: "7d", DeadLetters: "30d", RunsSeconds: 604800, DeadLettersSeconds: 2592000, Sweeping: true,
		LastPassAgeSeconds: ptr(12.5), OldestSeconds: map[string]float64{"runs": 605100, "processed": 604830, "dead": 172800}}
	r.Instances[1].Retention = &status.InstanceRetention{Runs: "7d", DeadLetters: "30d", RunsSeconds: 604800, DeadLettersSeconds: 2592000, OldestSeconds: map[string]float64{}}
	r.Instances[3].Retention = &status.InstanceRetention{Runs: "1d", DeadLetters: "30d", RunsSeconds: 86400, DeadLettersSeconds: 2592000, OldestSeconds: map[string]float64{}}
	r.Retention = status.RetentionFor(r.Instances)
	return r
}

func fixtureInstances() *status.Report {
	return &status.Report{
		SchemaVersion:     status.SchemaVersion,
		GeneratedAt:       time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC),
		Source:            status.Source{Kind: "runners", Dialect: "postgres", Database: "shop", RegistryDir: "/run/user/1000/voltro"},
		StaleAfterSeconds: 30,
		Instances: []status.Instance{
			{
				ReplicaID: "api-0", Process: "api", ProcessSource: "meta", PID: 4101,
				RunnerAddress: "10.1.2.3:34000", InspectAddress: "10.1.2.3:9090", Dialect: "postgres",
				Tier: "full", CDCFlavor: "LISTEN/NOTIFY", Coordination: "advisoryLock", ShardLock: "advisory",
				ShardLockReason: "postgres: session advisory locks on a reserved connection",
				OwnedShards:     150, OwnedShardsSource: "inspect", Ready: ptr(true), Problems: []status.Problem{},
				HeartbeatAgeSeconds: ptr(0.42), Reachable: true, EntityTypes: []string{"cart", "order"},
				Version: "0.1.0", Source: "runners",
			},
			{
				ReplicaID: "api-1", Process: "api", ProcessSource: "replicaId", PID: 0,
				RunnerAddress: "127.0.0.1:34000", InspectAddress: "127.0.0.1:9090", Dialect: "postgres",
				Tier: "full", CDCFlavor: "LISTEN/NOTIFY", Coordination: "advisoryLock", ShardLock: "advisory",
				ShardLockReason: "postgres: session advisory locks on a reserved connection",
				OwnedShards:     150, OwnedShardsSource: "inspect", Ready: ptr(true), Problems: []status.Problem{},
				HeartbeatAgeSeconds: ptr(1.5), Reachable: true, LocalhostRisk: true, LocalhostFix: status.LocalhostFix,
				EntityTypes: []string{"cart", "order"}, Version: "0.1.0", Source: "runners",
			},
			{
				ReplicaID: "api-2", Process: "api", ProcessSource: "meta", PID: 4177,
				RunnerAddress: "10.1.2.5:34000", InspectAddress: "10.1.2.5:9090", Dialect: "postgres",
				Tier: "full", OwnedShards: 0, OwnedShardsSource: "ledger", Problems: []status.Problem{},
				HeartbeatAgeSeconds: ptr(47.0), Stale: true, StaleReason: "heartbeat 47s old, more than 30s",
				UnreachableReason: "GET http://10.1.2.5:9090/_voltro/inspect/cluster: dial tcp 10.1.2.5:9090: connect: connection refused",
				EntityTypes:       []string{"cart", "order"}, Version: "0.1.0", Source: "runners",
			},
			{
				ReplicaID: "worker-0", Process: "worker", ProcessSource: "registry", PID: 5120,
				RunnerAddress: "10.1.2.9:34000", InspectAddress: "10.1.2.9:9090", Dialect: "mariadb",
				Tier: "full", CDCFlavor: "binlog CDC (ROW)", Coordination: "cluster", ShardLock: "row",
				ShardLockReason: "wsrep/Galera cluster detected",
				BinlogServerID:  ptr(uint32(1822263517)), OwnedShards: 0, OwnedShardsSource: "inspect", Ready: ptr(false),
				Problems: []status.Problem{
					{Kind: "unacquired", Detail: "3 shard(s) assigned to this runner could not be acquired for over 30s: [default/1 default/2 default/3]"},
				},
				HeartbeatAgeSeconds: ptr(3.0), Reachable: true, EntityTypes: []string{"mail"}, Version: "0.1.0", Source: "runners",
			},
			{
				ReplicaID: "worker-1", Process: "worker", ProcessSource: "registry", PID: 5121,
				RunnerAddress: "10.1.2.10:34000", InspectAddress: "10.1.2.10:9090", Dialect: "mysql",
				Tier: "inline-only", CDCFlavor: "inline emit", Coordination: "advisoryLock", ShardLock: "advisory",
				ShardLockReason: "single-primary server: GET_LOCK",
				OwnedShards:     75, OwnedShardsSource: "inspect", Ready: ptr(true), Problems: []status.Problem{},
				Notes:               []status.Problem{{Kind: "frozen_runner", Detail: "cannot end the lock session of frozen peer 10.1.2.11:34000 (heartbeat 41s old, 75 shards held): permission denied"}},
				HeartbeatAgeSeconds: ptr(8.25), Reachable: true, EntityTypes: []string{"mail"}, Version: "0.1.0", Source: "runners",
			},
			{
				ReplicaID: "api-3", Process: "api", ProcessSource: "meta", PID: 4190,
				RunnerAddress: "10.1.2.6:34000", InspectAddress: "10.1.2.6:9090", Dialect: "postgres",
				Tier: "full", OwnedShards: 0, OwnedShardsSource: "ledger", Problems: []status.Problem{},
				HeartbeatAgeSeconds: ptr(95.0), Stale: true, StaleReason: "heartbeat 1m35s old, more than 30s",
				UnreachableReason: "10.1.2.6:9090 answers as replica api-4 with runner 10.1.2.6:34001, not as this row's instance: its runner, shards and readiness are not shown here",
				AnsweredBy:        &status.Identity{ReplicaID: "api-4", RunnerAddress: "10.1.2.6:34001"},
				EntityTypes:       []string{"cart", "order"}, Version: "0.1.0", Source: "runners",
			},
			{
				ReplicaID: "worker-2", Process: "worker", ProcessSource: "meta", PID: 5130,
				RunnerAddress: "10.1.2.11:34000", InspectAddress: "10.1.2.11:9090", Dialect: "mariadb",
				Tier: "full", CDCFlavor: "binlog CDC (ROW)", Coordination: "advisoryLock", ShardLock: "advisory",
				ShardLockReason: "single-primary server: GET_LOCK",
				CDCProblem:      "another replica streams the binlog with server_id 2516733521 (error 4052): two instances share the replica id worker-2 (POD_NAME), so the server keeps dropping one stream for the other; give every instance its own POD_NAME",
				BinlogServerID:  ptr(uint32(2516733521)), OwnedShards: 38, OwnedShardsSource: "inspect", Ready: ptr(true), Problems: []status.Problem{},
				HeartbeatAgeSeconds: ptr(0.9), Reachable: true, Duplicate: true, EntityTypes: []string{"mail"}, Version: "0.1.0", Source: "runners",
			},
			{
				ReplicaID: "worker-2", Process: "worker", ProcessSource: "meta", PID: 5131,
				RunnerAddress: "10.1.2.12:34000", InspectAddress: "10.1.2.12:9090", Dialect: "mariadb",
				Tier: "full", CDCFlavor: "binlog CDC (ROW)", Coordination: "advisoryLock", ShardLock: "advisory",
				ShardLockReason: "single-primary server: GET_LOCK",
				BinlogServerID:  ptr(uint32(2516733521)), OwnedShards: 37, OwnedShardsSource: "inspect", Ready: ptr(true), Problems: []status.Problem{},
				HeartbeatAgeSeconds: ptr(1.1), Reachable: true, Duplicate: true, EntityTypes: []string{"mail"}, Version: "0.1.0", Source: "runners",
			},
			{
				ReplicaID: "worker-3", Process: "worker", ProcessSource: "meta", PID: 5140,
				RunnerAddress: "10.1.2.13:34000", InspectAddress: "10.1.2.13:9090", Dialect: "mariadb",
				Tier: "inline-only", CDCFlavor: "inline emit", Coordination: "advisoryLock", ShardLock: "advisory",
				ShardLockReason: "single-primary server: GET_LOCK",
				CDCProblem:      "fell back to inline emit: replication user cannot connect: Error 1045 (28000): Access denied for user 'repl'@'10.1.2.13' (using password: YES)",
				OwnedShards:     75, OwnedShardsSource: "inspect", Ready: ptr(true), Problems: []status.Problem{},
				HeartbeatAgeSeconds: ptr(2.0), Reachable: true, EntityTypes: []string{"mail"}, Version: "0.1.0", Source: "runners",
			},
			{
				ReplicaID: "api-5", Process: "api", ProcessSource: "meta", PID: 4201,
				RunnerAddress: "10.1.3.4:34000", InspectAddress: "10.1.3.4:9090", Dialect: "postgres",
				Tier: "full", OwnedShards: 0, OwnedShardsSource: "ledger", Problems: []status.Problem{},
				HeartbeatAgeSeconds: ptr(0.6),
				UnreachableReason:   "GET http://10.1.3.4:9090/_voltro/inspect/cluster: 401: the instance wants the inspect token, which was withheld from this host (token withheld)",
				TokenWithheld:       "10.1.3.4 is not a trusted inspect host; set VOLTRO_INSPECT_TRUSTED_HOSTS (networks such as 10.0.0.0/8, or host names, comma-separated) to send VOLTRO_INSPECT_TOKEN there",
				EntityTypes:         []string{"cart", "order"}, Version: "0.1.0", Source: "runners",
			},
		},
		Duplicates: []status.Duplicate{
			{Kind: "binlogServerId", Value: "2516733521", Instances: []status.Identity{{ReplicaID: "worker-2", RunnerAddress: "10.1.2.11:34000"}, {ReplicaID: "worker-2", RunnerAddress: "10.1.2.12:34000"}}},
			{Kind: "replicaId", Value: "worker-2", Instances: []status.Identity{{ReplicaID: "worker-2", RunnerAddress: "10.1.2.11:34000"}, {ReplicaID: "worker-2", RunnerAddress: "10.1.2.12:34000"}}},
		},
		Shared: &status.Shared{
			ActiveWindowSeconds: status.ActiveWindow,
			Schedules: &status.ScheduleState{
				ActiveReplicas:   []status.ReplicaRuns{{ReplicaID: "api-0", Runs: 12}, {ReplicaID: "api-1", Runs: 11}},
				RecentClaims:     23,
				LatestClaims:     []status.Claim{{Schedule: "nightly", ReplicaID: "api-0", AgeSeconds: 2}, {Schedule: "tick", ReplicaID: "api-1", AgeSeconds: 0.75}},
				Running:          1,
				RunningByReplica: []status.ReplicaRuns{{ReplicaID: "api-0", Runs: 1}},
			},
			Workflows: &status.WorkflowCounts{Running: 3, Suspended: 5},
			Messages: status.MessageState{DeadLetters: 2, OldestUndeliveredSeconds: 125,
				UnhostedBacklog: []status.UnhostedType{{EntityType: "invoice", Messages: 12, OldestSeconds: 125}}},
			Errors: []string{},
		},
	}
}
