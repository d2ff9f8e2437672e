package runner

// Suspects and frozen peers. A suspect is a peer whose row looks live but
// which the evidence says is gone (it lost its locks, its lock session is
// absent, it left proposed shards free): proposals pass it over. A suspect
// is forgiven when its row shows a new process at its address (a restart
// on a pinned address is served at once), or when the evidence is old and
// its heartbeat has advanced since (it was alive after all); never merely
// because time passed while its row stands still, which would hand shards
// back to a dead peer.
//
// A frozen peer is the opposite case: its heartbeat is stale, yet its lock
// session still holds shards (SIGSTOP, a VM pause, a stuck kernel). Nothing
// frees those locks by itself, so a survivor ends that session through the
// database (store.Fencer) and takes the shards at a new epoch; the frozen
// process, when it wakes, finds its session gone and its writes fenced.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// suspect is why and since when a peer is passed over, with the row it had
// then, to tell a new process or a fresh heartbeat at the same address.
type suspect struct {
	at      time.Time
	started time.Time
	beat    time.Time
}

// suspect makes (or keeps) peer a suspect as of now.
func (r *Runner) suspect(peer string, now time.Time) {
	row := r.rows[peer]
	if _, known := r.suspects[peer]; !known {
		r.changedAt = now
	}
	r.suspects[peer] = suspect{at: now, started: row.StartedAt, beat: row.LastHeartbeat}
}

func (r *Runner) isSuspect(peer string) bool {
	_, ok := r.suspects[peer]
	return ok
}

// expiry is how old a heartbeat may get before its runner counts as gone.
func (r *Runner) expiry() time.Duration { return 3 * r.opts.Heartbeat }

// forgetSuspects runs after every listing of the runners.
func (r *Runner) forgetSuspects(now time.Time) {
	for p, s := range r.suspects {
		row, ok := r.rows[p]
		switch {
		case !ok || row.HeartbeatAge >= r.expiry():
			// Gone from the live set by its own row: nothing to pass over.
			delete(r.suspects, p)
		case !row.StartedAt.Equal(s.started):
			r.log.Info("workflow runner: a new process registered at a suspected peer's address; proposing shards to it",
				"peer", p, "replica", row.ReplicaID)
			delete(r.suspects, p)
		case now.Sub(s.at) > r.expiry() && !row.LastHeartbeat.Equal(s.beat):
			delete(r.suspects, p)
		}
	}
}

// fenceFrozen ends the lock sessions of peers whose heartbeat is stale but
// whose locks are still held, at most once per heartbeat per peer, and
// reports whether it ended any: the caller surveys again, sees their shards
// free and takes them over as from a crashed peer.
func (r *Runner) fenceFrozen(ctx context.Context, states map[string]store.ShardState, now time.Time) bool {
	if r.opts.Mode != store.LockAdvisory {
		return false
	}
	frozen := map[string][]string{}
	for _, sh := range r.all {
		st := states[sh]
		if st.Owner == "" || st.Owner == r.opts.Address || st.Free {
			continue
		}
		if row, ok := r.rows[st.Owner]; ok && row.HeartbeatAge >= r.expiry() {
			frozen[st.Owner] = append(frozen[st.Owner], sh)
		}
	}
	for p := range r.fenceErrs {
		if _, still := frozen[p]; !still {
			delete(r.fenceErrs, p)
		}
	}
	peers := make([]string, 0, len(frozen))
	for p := range frozen {
		peers = append(peers, p)
	}
	slices.Sort(peers)
	ended := false
	for _, p := range peers {
		if at, ok := r.fenced[p]; ok && now.Sub(at) < r.opts.Heartbeat {
			continue
		}
		r.fenced[p] = now
		age := r.rows[p].HeartbeatAge.Round(time.Millisecond)
		n, err := r.locker.Fence(ctx, p, frozen[p])
		if err != nil {
			msg := err.Error()
			if errors.Is(err, errs.ErrPermission) {
				msg = fmt.Sprintf("cannot end the lock session of frozen peer %s (heartbeat %s old, %d shards held): %v", p, age, len(frozen[p]), err)
			}
			if r.fenceErrs[p] != msg {
				r.log.Error("workflow runner: a frozen peer keeps its shards and its session could not be ended", "peer", p,
					"heartbeat_age", age, "shards", len(frozen[p]), "err", err)
			}
			r.fenceErrs[p] = msg
			continue
		}
		delete(r.fenceErrs, p)
		r.fences++
		ended = ended || n > 0
		r.log.Warn("workflow runner: peer's heartbeat is stale but its lock session still holds shards (frozen?); ended its session to take them over",
			"peer", p, "heartbeat_age", age, "shards", len(frozen[p]), "sessions", n)
	}
	return ended
}

// awaitFenced re-surveys, briefly, until the locks of ended sessions are
// free (the server drops a terminated session's locks as it exits).
func (r *Runner) awaitFenced(ctx context.Context, states map[string]store.ShardState) (map[string]store.ShardState, error) {
	var held []string
	for _, sh := range r.all {
		if st := states[sh]; st.Owner != "" && st.Owner != r.opts.Address && !st.Free && r.rows[st.Owner].HeartbeatAge >= r.expiry() {
			held = append(held, sh)
		}
	}
	for try := 0; ; try++ {
		time.Sleep(20 * time.Millisecond)
		next, err := r.survey(ctx)
		if err != nil {
			return nil, err
		}
		free := true
		for _, sh := range held {
			free = free && next[sh].Free
		}
		if free || try == 9 {
			return next, nil
		}
	}
}
