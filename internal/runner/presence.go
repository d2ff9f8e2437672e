package runner

// Presence: a peer whose heartbeat row looks fresh but which owns nothing
// (killed right after its shards were taken over, or before it took any)
// loses no lock when it dies, so no survey sees it go. In advisory mode each
// locker holds a presence lock for its session's life; when free shards are
// proposed to a peer, one query asks whether that peer's session still
// exists, and a dead peer is passed over on the same pass instead of after
// the unclaimed-proposal grace period (see unclaimed.go, which remains the
// rule for row mode and stores without presence).

import (
	"context"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// probePresence suspects every peer that is proposed a free shard and has
// no live locker session. It reports whether it added a suspect. It asks
// the database only while such proposals exist, so an idle, balanced
// cluster pays nothing for it.
func (r *Runner) probePresence(ctx context.Context, states map[string]store.ShardState, now time.Time) bool {
	if r.opts.Mode != store.LockAdvisory {
		return false
	}
	var peers []string
	for _, sh := range r.all {
		want := r.assigned[sh]
		if want == "" || want == r.opts.Address || !states[sh].Free || slices.Contains(peers, want) {
			continue
		}
		if r.isSuspect(want) {
			continue
		}
		peers = append(peers, want)
	}
	if len(peers) == 0 {
		return false
	}
	slices.Sort(peers)
	absent, err := r.locker.Absent(ctx, peers)
	if err != nil {
		r.log.Debug("workflow runner: presence probe failed; relying on the grace period", "err", err)
		return false
	}
	for _, p := range absent {
		r.log.Info("workflow runner: peer's lock session is gone; proposing its shards to others", "peer", p)
		r.suspect(p, now)
	}
	return len(absent) > 0
}
