// Collecting a Report: discover the instances (runners table on a SQL
// store, the local registry directory otherwise), ask each one for its
// inspect document in parallel, and read the shared footer.

package status

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/inspectclient"
	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/store"
)

// Options say where to look.
type Options struct {
	// Store is the store of DB_URL, nil when DB_URL is not set (then only
	// the registry directory is read, for every database).
	Store store.Driver
	// Dialect and Database name DB_URL's database (config.Config.DB).
	Dialect  string
	Database string
	// RegistryDir is the local registry directory (registry.Dir).
	RegistryDir string
	// Heartbeat is VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT; three of them
	// without a heartbeat make an instance stale.
	Heartbeat time.Duration
	// InspectToken is sent as a bearer token (VOLTRO_INSPECT_TOKEN) to the
	// inspect addresses InspectTrust allows; the others are asked without
	// it, and their rows say so (TokenWithheld).
	InspectToken string
	// InspectTrust: the zero value trusts loopback only
	// (config.Config.InspectTrust, VOLTRO_INSPECT_TRUSTED_HOSTS).
	InspectTrust inspectclient.Trust
	// Process keeps only instances of this process name or replica id.
	Process string
	// HTTP asks the instances; nil uses a plain client.
	HTTP   *http.Client
	Logger *slog.Logger
	// Now stamps the report; nil is time.Now.
	Now func() time.Time
}

// Collect builds the report. It fails only when the discovery source
// itself cannot be read; unreachable instances and unreadable footer parts
// are reported inside it. The registry entries read are returned so the
// caller can prune the stale ones after showing them.
func Collect(ctx context.Context, o Options) (*Report, []registry.Listed, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Database = registry.DatabaseKey(o.Dialect, o.Database)
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	local, err := registry.List(o.RegistryDir)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster status: %w", err)
	}
	rep := &Report{
		SchemaVersion: SchemaVersion, GeneratedAt: now().UTC(),
		Source:            Source{Kind: registry.SourceRegistry, Dialect: o.Dialect, Database: o.Database, RegistryDir: o.RegistryDir},
		StaleAfterSeconds: (3 * o.Heartbeat).Seconds(), ProcessFilter: o.Process, Instances: []Instance{},
		Duplicates: []Duplicate{},
	}
	var found []registry.Instance
	ledger := map[string]int{}
	haveLedger := false
	if o.Store != nil && clusteredDialect(o.Dialect) {
		rep.Source.Kind = registry.SourceRunners
		rows, err := o.Store.ListRunners(ctx)
		if err != nil {
			return nil, local, fmt.Errorf("cluster status: reading the runners table: %w", err)
		}
		found = registry.FromRunners(rows, o.Dialect, o.Database, local)
		// Instances with single-process runner storage keep no runner row:
		// the local registry is where they are found.
		for _, in := range registry.FromEntries(local, o.Dialect, o.Database, nil) {
			if strings.HasPrefix(in.RunnerAddress, "local:") {
				found = append(found, in)
			}
		}
		if locks, err := o.Store.ShardLocks(ctx); err != nil {
			o.Logger.Warn("cluster status: reading the shard ledger failed", "err", err)
		} else {
			haveLedger = true
			for _, l := range locks {
				if l.Owner != "" && !l.Expired {
					ledger[l.Owner]++
				}
			}
		}
	} else {
		var rows []store.Runner
		if o.Store != nil {
			if rows, err = o.Store.ListRunners(ctx); err != nil {
				o.Logger.Warn("cluster status: reading the runners table failed", "err", err)
			}
		}
		dialect := o.Dialect
		if o.Store == nil {
			dialect = "" // no DB_URL: every local instance
		}
		found = registry.FromEntries(local, dialect, o.Database, rows)
	}
	found = filter(found, o.Process)
	rep.Instances = ask(ctx, o, found, func(addr string) int {
		if !haveLedger {
			return -1
		}
		return ledger[addr]
	})
	rep.Duplicates = markDuplicates(rep.Instances)
	rep.Retention = retentionInForce(rep.Instances)
	if o.Store != nil && o.Store.Dialect() != store.Memory {
		rep.Shared = readShared(ctx, o.Store, 3*o.Heartbeat)
	}
	return rep, local, nil
}

// ask fetches every instance's inspect document in parallel and builds
// the rows, ordered by process, replica and runner address.
func ask(ctx context.Context, o Options, found []registry.Instance, ledger func(string) int) []Instance {
	client := inspectclient.New(o.HTTP, o.InspectToken, o.InspectTrust)
	rows := make([]Instance, len(found))
	var wg sync.WaitGroup
	for i, in := range found {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var doc inspect.Doc
			var withheld string
			var err error
			if in.Stale && in.Source == registry.SourceRegistry {
				err = fmt.Errorf("not asked: %s", in.StaleReason)
			} else {
				doc, withheld, err = fetchInspect(ctx, client, in.InspectAddr)
			}
			rows[i] = row(in, doc, err, ledger(in.RunnerAddress), 3*o.Heartbeat)
			rows[i].TokenWithheld = withheld
		}()
	}
	wg.Wait()
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Process != b.Process {
			return a.Process < b.Process
		}
		if a.ReplicaID != b.ReplicaID {
			return a.ReplicaID < b.ReplicaID
		}
		return a.RunnerAddress < b.RunnerAddress
	})
	return rows
}

// filter keeps the instances whose process name or replica id is process.
func filter(in []registry.Instance, process string) []registry.Instance {
	if process == "" {
		return in
	}
	var out []registry.Instance
	for _, x := range in {
		if x.Process == process || x.ReplicaID == process {
			out = append(out, x)
		}
	}
	return out
}

// clusteredDialect: stores whose runners table other processes share.
func clusteredDialect(d string) bool {
	return store.Dialect(d).Shared()
}
