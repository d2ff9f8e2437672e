// One row: what the registry found, merged with what the instance said
// about itself (or why it could not be asked), judged for staleness and for
// a runner address other machines cannot reach.

package status

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/registry"
)

// LocalhostFix is the advice printed for a runner on a loopback address.
const LocalhostFix = config.LocalhostFix

// inlineEmit is the CDC flavor label of the inline transport (cdc.Inline).
const inlineEmit = "inline emit"

// row builds the row of in. doc is valid when fetchErr is nil; ledger is
// the number of shards the ledger names in.RunnerAddress as owner (-1 when
// the ledger was not read).
func row(in registry.Instance, doc inspect.Doc, fetchErr error, ledger int, staleAfter time.Duration) Instance {
	r := Instance{
		ReplicaID: in.ReplicaID, Process: in.Process, ProcessSource: in.ProcessSource, PID: in.PID,
		RunnerAddress: in.RunnerAddress, InspectAddress: in.InspectAddr, Dialect: in.Dialect,
		Tier: inferTier(in), CDCFlavor: "", Coordination: "", ShardLock: "",
		OwnedShardsSource: "none", Problems: []Problem{}, EntityTypes: nonNil(in.EntityTypes),
		Version: in.Version, Source: in.Source,
		Stale: in.Stale, StaleReason: in.StaleReason,
	}
	if in.HasHeartbeat {
		age := in.HeartbeatAge.Seconds()
		r.HeartbeatAgeSeconds = &age
		if staleAfter > 0 && in.HeartbeatAge > staleAfter && !r.Stale {
			r.Stale = true
			r.StaleReason = fmt.Sprintf("heartbeat %s old, more than %s", human(in.HeartbeatAge), human(staleAfter))
		}
	}
	if ledger >= 0 {
		r.OwnedShards, r.OwnedShardsSource = ledger, "ledger"
	}
	if fetchErr == nil {
		if other := impostor(in, doc); other != "" {
			// another instance answers at this row's inspect address (it
			// reused a dead instance's VOLTRO_INSPECT_ADDR): nothing it says
			// is this row's
			r.AnsweredBy = &Identity{ReplicaID: doc.ReplicaID, RunnerAddress: doc.RunnerAddress}
			fetchErr = fmt.Errorf("%s answers as %s, not as this row's instance: its runner, shards and readiness are not shown here", in.InspectAddr, other)
		}
	}
	if fetchErr != nil {
		r.UnreachableReason = fetchErr.Error()
		if in.Source == registry.SourceRunners && !in.RowHealthy {
			r.Problems = append(r.Problems, Problem{Kind: "runner_row", Detail: "the runner row is marked unhealthy (pool or shard-lock connection)"})
		}
	} else {
		r.Reachable = true
		r.Dialect = orDefault(doc.Dialect, r.Dialect)
		r.RunnerAddress = orDefault(doc.RunnerAddress, r.RunnerAddress)
		r.Tier = tier(doc.Tier, doc.CDCFlavor)
		r.CDCFlavor, r.Coordination, r.ShardLock, r.ShardLockReason = doc.CDCFlavor, doc.Coordination, doc.ShardLock.Mode, doc.ShardLock.Reason
		r.CDCProblem = doc.Extra["cdcProblem"]
		if s := doc.Extra["sameReplicaIdRunners"]; s != "" {
			r.sameReplica = strings.Split(s, ",")
		}
		if id, err := strconv.ParseUint(doc.Extra["binlogServerId"], 10, 32); err == nil {
			v := uint32(id)
			r.BinlogServerID = &v
		}
		r.OwnedShards, r.OwnedShardsSource = len(doc.OwnedShards), "inspect"
		ready := doc.Health.Ready
		r.Ready = &ready
		for _, p := range doc.Health.Problems {
			r.Problems = append(r.Problems, Problem{Kind: p.Kind, Detail: p.Detail})
		}
		for _, p := range doc.Health.Notes {
			r.Notes = append(r.Notes, Problem{Kind: p.Kind, Detail: p.Detail})
		}
		if len(doc.EntityTypes) > 0 {
			r.EntityTypes = slices.Clone(doc.EntityTypes)
		}
		r.Version = orDefault(doc.Version, r.Version)
		r.LocalhostRisk = doc.LocalhostRisk
		if rt := doc.Retention; rt != nil {
			r.Retention = &InstanceRetention{
				Runs: rt.Runs, DeadLetters: rt.DeadLetters, RunsSeconds: rt.RunsSeconds, DeadLettersSeconds: rt.DeadLettersSeconds,
				Sweeping: rt.Sweeping, LastPassAgeSeconds: rt.LastPassAgeSeconds, OldestSeconds: rt.OldestSeconds,
			}
			if r.Retention.OldestSeconds == nil {
				r.Retention.OldestSeconds = map[string]float64{}
			}
		}
	}
	// Without an answer, judge by the address; an instance that answers
	// says itself whether the loopback address was declared intended.
	if fetchErr != nil && sqlBacked(r.Dialect, r.RunnerAddress) && loopbackAddr(r.RunnerAddress) {
		r.LocalhostRisk = true
	}
	if r.LocalhostRisk {
		r.LocalhostFix = LocalhostFix
	}
	return r
}

// impostor describes the instance that answered at in's inspect address
// when it is not in: another replica id, or another runner address (a
// restarted process of the same replica on a new address answers for its
// new row, not for the dead one). "" when the document is in's own.
func impostor(in registry.Instance, doc inspect.Doc) string {
	replica := in.ReplicaID != "" && doc.ReplicaID != in.ReplicaID
	runner := in.RunnerAddress != "" && doc.RunnerAddress != in.RunnerAddress
	if !replica && !runner {
		return ""
	}
	return fmt.Sprintf("replica %s with runner %s", cell(doc.ReplicaID), cell(doc.RunnerAddress))
}

// tier refines the engine's tier: a full cluster whose change feed is
// inline emit moves work between instances but not changes.
func tier(engineTier, cdcFlavor string) string {
	if engineTier == "full" && cdcFlavor == inlineEmit {
		return "inline-only"
	}
	if engineTier == "" {
		return "unknown"
	}
	return engineTier
}

// inferTier is the tier when the instance cannot be asked: what its
// address and dialect imply.
func inferTier(in registry.Instance) string {
	switch {
	case in.Dialect == "memory":
		return "none"
	case strings.HasPrefix(in.RunnerAddress, "local:") || in.Dialect == "sqlite":
		return "single-process"
	case in.Source == registry.SourceRunners:
		return "full"
	}
	return "unknown"
}

// sqlBacked: the runner coordinates through a shared SQL store, so other
// instances dial its address.
func sqlBacked(dialect, addr string) bool {
	switch dialect {
	case "postgres", "mariadb", "mysql":
		return addr != "" && !strings.HasPrefix(addr, "local:")
	}
	return false
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return config.IsLoopbackHost(host)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
