package voltro

// What this instance reports about its parts through inspect (and so
// `voltro cluster status`): given to the engine at New as providers, read
// each time inspect builds its document. The parts start after the engine
// (the feed at New, the scheduler at the first schedule), so each provider
// reads the part as it is then.

import (
	"strconv"

	"github.com/voltro/voltro/internal/engine"
)

func (a *App) facts() engine.Facts {
	return engine.Facts{
		CDCFlavor: func() string {
			if a.feed == nil {
				return ""
			}
			return a.feed.Flavor()
		},
		ChangesLocal: func() bool { return a.feed != nil && !a.feed.Transport().CrossInstance() },
		Coordination: a.coordination,
		Extra:        a.extra,
	}
}

// coordination is the scheduler's default coordination, "" before the
// first schedule.
func (a *App) coordination() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sched == nil {
		return ""
	}
	return string(a.sched.DefaultCoordination())
}

// extra: why the feed is degraded, its binlog server id, and other live
// instances with this replica id.
func (a *App) extra() map[string]string {
	out := map[string]string{}
	if f := a.feed; f != nil {
		out["cdcProblem"] = f.Problem()
		if id := f.ServerID(); id != 0 {
			out["binlogServerId"] = strconv.FormatUint(uint64(id), 10)
		}
	}
	if w := a.replicas; w != nil {
		out["sameReplicaIdRunners"] = w.text()
	}
	return out
}
