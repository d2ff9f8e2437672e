// Discovery: the instances of one database, from the runners table of a SQL
// store or from the local registry directory, each with the best process
// name known for it.

package registry

import (
	"sort"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// Where an instance was found.
const (
	SourceRunners  = "runners"  // a row of the runners table
	SourceRegistry = "registry" // an entry of the local registry directory
)

// Where its process name came from.
const (
	ProcessFromMeta     = "meta"      // the runner row's Meta
	ProcessFromRegistry = "registry"  // a local registry entry
	ProcessFromReplica  = "replicaId" // nothing better known: the replica id
)

// Instance is one discovered instance, before anyone asked it anything.
type Instance struct {
	ReplicaID     string
	Process       string
	ProcessSource string
	PID           int // 0 when unknown
	RunnerAddress string
	InspectAddr   string
	Dialect       string
	Database      string
	Source        string
	EntityTypes   []string
	Version       string
	// HeartbeatAge is judged by the database clock; HasHeartbeat is false
	// when no runner row was seen for the instance.
	HeartbeatAge time.Duration
	HasHeartbeat bool
	RowHealthy   bool // the runner row's own healthy flag (runners only)
	// Stale: the registry entry's process is gone.
	Stale       bool
	StaleReason string
	// Entry is the local registry entry matched to this instance, if any.
	Entry *Listed
}

// FromRunners turns runner rows of a SQL store into instances. Process
// names come from the row's Meta, else from a local entry of the same
// replica and inspect address on this database, else the replica id.
func FromRunners(rows []store.Runner, dialect, database string, local []Listed) []Instance {
	out := make([]Instance, 0, len(rows))
	for _, r := range rows {
		in := Instance{
			ReplicaID: r.ReplicaID, RunnerAddress: r.Address, InspectAddr: r.InspectAddr,
			Dialect: dialect, Database: database, Source: SourceRunners,
			EntityTypes: r.EntityTypes, Version: r.Version,
			HeartbeatAge: r.HeartbeatAge, HasHeartbeat: true, RowHealthy: r.Healthy,
		}
		meta := ParseMeta(r.Meta)
		in.PID = meta.PID
		if l := match(local, r, dialect, database); l != nil {
			in.Entry = l
			if in.PID == 0 {
				in.PID = l.PID
			}
			if meta.Process == "" && l.Process != "" {
				in.Process, in.ProcessSource = l.Process, ProcessFromRegistry
			}
		}
		if meta.Process != "" {
			in.Process, in.ProcessSource = meta.Process, ProcessFromMeta
		}
		if in.Process == "" {
			in.Process, in.ProcessSource = r.ReplicaID, ProcessFromReplica
		}
		out = append(out, in)
	}
	return out
}

// match finds the local entry written by the instance of row r.
func match(local []Listed, r store.Runner, dialect, database string) *Listed {
	for i := range local {
		l := &local[i]
		if l.ReplicaID == r.ReplicaID && l.InspectAddr != "" && l.InspectAddr == r.InspectAddr &&
			sameDialect(l.Dialect, dialect) && l.Database == database {
			return l
		}
	}
	return nil
}

// FromEntries turns the local entries of one database (dialect "" = every
// entry) into instances, ordered by process and replica. Rows, when the
// store has them (SQLite keeps a runner row even in one process), add the
// heartbeat age of the same replica.
func FromEntries(local []Listed, dialect, database string, rows []store.Runner) []Instance {
	var out []Instance
	for i := range local {
		l := &local[i]
		if dialect != "" && (!sameDialect(l.Dialect, dialect) || l.Database != database) {
			continue
		}
		in := Instance{
			ReplicaID: l.ReplicaID, Process: l.Process, ProcessSource: ProcessFromRegistry, PID: l.PID,
			RunnerAddress: l.RunnerAddress, InspectAddr: l.InspectAddr, Dialect: l.Dialect, Database: l.Database,
			Source: SourceRegistry, Stale: l.Stale, StaleReason: l.StaleReason, Entry: l,
		}
		if in.Process == "" {
			in.Process, in.ProcessSource = l.ReplicaID, ProcessFromReplica
		}
		for _, r := range rows {
			if r.ReplicaID == l.ReplicaID && (l.RunnerAddress == "" || r.Address == l.RunnerAddress) {
				in.HeartbeatAge, in.HasHeartbeat, in.RowHealthy = r.HeartbeatAge, true, r.Healthy
				in.EntityTypes, in.Version = r.EntityTypes, r.Version
			}
		}
		out = append(out, in)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Process != out[j].Process {
			return out[i].Process < out[j].Process
		}
		return out[i].ReplicaID < out[j].ReplicaID
	})
	return out
}

// sameDialect: mariadb and mysql name one family.
func sameDialect(a, b string) bool {
	fam := func(s string) string {
		s = strings.ToLower(s)
		if s == string(store.MySQL) {
			return string(store.MariaDB)
		}
		return s
	}
	return fam(a) == fam(b)
}
