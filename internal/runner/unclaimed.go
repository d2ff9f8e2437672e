package runner

// Unclaimed proposals: a free shard that the proposal gives to a peer which
// never takes it. The lost-locks rule in balance only catches a dead peer
// that still owns shards in the ledger; a peer that died owning nothing (its
// shards were already taken over) but whose heartbeat still looks fresh is
// caught here instead, from the survey data the pass already has.

import (
	"slices"
	"time"

	"github.com/voltro/voltro/internal/store"
)

const (
	// unclaimedGraceTicks: a live peer takes a free shard proposed to it on
	// its next survey, within one tick (two when its live set lags and the
	// stuck rule in balance makes it list the runners again, a few more
	// when a slow store spreads a large acquisition over several passes).
	// Three ticks comfortably covers that, so a healthy peer is never
	// suspected, while a dead one is found long before its heartbeat goes
	// stale (3 × heartbeat).
	unclaimedGraceTicks = 3
	// unclaimedGraceMin keeps very short ticks (tests, sub-second
	// heartbeats) from suspecting a peer that is merely descheduled for a
	// moment; with sub-second heartbeats staleness is the faster signal.
	unclaimedGraceMin = 3 * time.Second
)

// unclaimedShard is a free shard proposed to a peer, and since when.
type unclaimedShard struct {
	peer  string
	since time.Time
}

func (r *Runner) unclaimedGrace() time.Duration {
	return max(unclaimedGraceTicks*r.opts.Tick, unclaimedGraceMin)
}

// watchUnclaimed notes the free shards the current proposal gives to another
// runner, forgets those that became held or were proposed to someone else,
// and makes a suspect of every peer that has left one of its proposed shards
// free for longer than the grace period. It reports whether it added one, in
// which case the proposal must be computed again.
func (r *Runner) watchUnclaimed(states map[string]store.ShardState, now time.Time) bool {
	// Only an unbroken watch counts: after passes that did not survey (lock
	// storage or pool down, here or everywhere) start over rather than
	// blame a peer for a wait that nobody observed.
	if now.Sub(r.lastWatch) > 2*r.opts.Tick {
		clear(r.unclaimed)
	}
	r.lastWatch = now
	for _, sh := range r.all {
		st, want := states[sh], r.assigned[sh]
		_, mine := r.held[sh]
		if !st.Free || mine || want == "" || want == r.opts.Address {
			delete(r.unclaimed, sh)
			continue
		}
		if u, ok := r.unclaimed[sh]; !ok || u.peer != want {
			r.unclaimed[sh] = unclaimedShard{peer: want, since: now}
		}
	}
	grace := r.unclaimedGrace()
	late := map[string]int{}
	for _, u := range r.unclaimed {
		if now.Sub(u.since) >= grace {
			late[u.peer]++
		}
	}
	if len(late) == 0 {
		return false
	}
	peers := make([]string, 0, len(late))
	for p := range late {
		peers = append(peers, p)
	}
	slices.Sort(peers)
	for _, p := range peers {
		if !r.isSuspect(p) {
			r.log.Info("workflow runner: peer did not take the shards proposed to it; proposing them to others",
				"peer", p, "shards", late[p], "grace", grace)
		}
		r.suspect(p, now)
	}
	for sh, u := range r.unclaimed {
		if late[u.peer] > 0 {
			delete(r.unclaimed, sh)
		}
	}
	return true
}
