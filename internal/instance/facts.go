package instance

// What this instance reports about its parts through inspect (and so
// `voltro cluster status`): given to the engine at New as providers, read
// each time inspect builds its document.

import (
	"strconv"

	"github.com/voltro/voltro/internal/engine"
)

func (in *Instance) facts() engine.Facts {
	return engine.Facts{
		CDCFlavor: func() string {
			if in.Feed == nil {
				return ""
			}
			return in.Feed.Flavor()
		},
		ChangesLocal: func() bool { return in.Feed != nil && !in.Feed.Transport().CrossInstance() },
		Coordination: in.coordination,
		Extra:        in.extra,
	}
}

// coordination is the scheduler's default coordination, "" while no
// schedule is registered.
func (in *Instance) coordination() string {
	if in.Scheduler == nil || in.Scheduler.Registered() == 0 {
		return ""
	}
	return string(in.Scheduler.DefaultCoordination())
}

// extra: why the feed is degraded, its binlog server id, and other live
// instances with this replica id.
func (in *Instance) extra() map[string]string {
	out := map[string]string{}
	if f := in.Feed; f != nil {
		out["cdcProblem"] = f.Problem()
		if id := f.ServerID(); id != 0 {
			out["binlogServerId"] = strconv.FormatUint(uint64(id), 10)
		}
	}
	if w := in.replicas; w != nil {
		out["sameReplicaIdRunners"] = w.text()
	}
	return out
}
