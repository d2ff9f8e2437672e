package runner

// Identity: one process per runner address. A process restarted on its old
// address (a pinned port, a StatefulSet) inherits it at once when the old
// process is gone; a second live process with the same address takes no
// shards while the first lives.
//
// Advisory mode decides with the presence lock: this process acts for its
// address only while its locker holds it. When another session holds it and
// the address's row is stale, that session is a frozen predecessor and is
// ended through the database; when the row is fresh, a live process owns
// the address. Row mode has no session to ask: before its first
// registration the process watches the address's row, and goes ahead once
// the row is absent or stale, or its heartbeat did not move for a heartbeat
// and two ticks (a live process would have stamped it).

import (
	"context"
	"fmt"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// ownAddress reports whether this process may act for its address now.
func (r *Runner) ownAddress(ctx context.Context, now time.Time) bool {
	if r.superseded {
		return false
	}
	if r.opts.Mode == store.LockAdvisory {
		if r.locker.Present() {
			r.setRefused("")
			return true
		}
		row, found, err := r.ownRow(ctx)
		switch {
		case err != nil:
			r.setRefused("another session holds this runner's presence lock, and reading the runner row failed: " + err.Error())
		case found && row.HeartbeatAge >= r.expiry():
			r.fenceOwnPredecessor(ctx, row)
		case found:
			r.setRefused(fmt.Sprintf("another live process (replica %s, heartbeat %s ago) holds runner address %s; this process takes no shards while it does",
				row.ReplicaID, row.HeartbeatAge.Round(time.Millisecond), r.opts.Address))
		default:
			r.setRefused("another session holds this runner's presence lock (an earlier session not reaped yet); waiting for it to go")
		}
		return false
	}
	if r.registered || r.addressOK || !r.d.Dialect().Shared() {
		return true // SQLite and memory: one process per store by construction
	}
	row, found, err := r.ownRow(ctx)
	if err != nil {
		r.setRefused("reading the runner row failed: " + err.Error())
		return false
	}
	if !found || row.HeartbeatAge >= r.expiry() {
		r.addressOK = true
		r.setRefused("")
		return true
	}
	if r.watch.since.IsZero() || !row.LastHeartbeat.Equal(r.watch.beat) {
		if !r.watch.since.IsZero() {
			r.setRefused(fmt.Sprintf("another live process (replica %s) heartbeats as runner address %s; this process takes no shards while it does",
				row.ReplicaID, r.opts.Address))
		} else {
			r.setRefused(fmt.Sprintf("runner address %s was in use %s ago (replica %s); waiting one heartbeat to see that process is gone",
				r.opts.Address, row.HeartbeatAge.Round(time.Millisecond), row.ReplicaID))
		}
		r.watch = addressWatch{since: now, beat: row.LastHeartbeat}
		return false
	}
	if now.Sub(r.watch.since) < r.opts.Heartbeat+2*r.opts.Tick {
		return false
	}
	r.addressOK = true
	r.setRefused("")
	return true
}

// addressWatch is the row-mode wait for an earlier process at our address.
type addressWatch struct {
	since time.Time
	beat  time.Time
}

// fenceOwnPredecessor ends the session of a frozen process that had our
// address, then reopens the locker so it takes the presence lock.
func (r *Runner) fenceOwnPredecessor(ctx context.Context, row store.Runner) {
	age := row.HeartbeatAge.Round(time.Millisecond)
	n, err := r.locker.Fence(ctx, r.opts.Address, nil)
	if err != nil {
		r.setRefused(fmt.Sprintf("an earlier process at this address (heartbeat %s old) still holds its locks and its session could not be ended: %v", age, err))
		return
	}
	r.log.Warn("workflow runner: an earlier process at this address is frozen with its locks held; ended its session",
		"replica", row.ReplicaID, "heartbeat_age", age, "sessions", n)
	// A new locker takes the presence lock the ended session held.
	_ = r.locker.Close()
	r.locker, r.lockHealthy = nil, false
}

func (r *Runner) ownRow(ctx context.Context) (store.Runner, bool, error) {
	rs, err := r.d.ListRunners(ctx)
	if err != nil {
		return store.Runner{}, false, err
	}
	for _, x := range rs {
		if x.Address == r.opts.Address {
			return x, true, nil
		}
	}
	return store.Runner{}, false, nil
}

func (r *Runner) setRefused(why string) {
	switch {
	case why == r.refused:
	case why == "":
		r.log.Info("workflow runner: this process now holds its runner address", "address", r.opts.Address)
	default:
		r.log.Error("workflow runner: not taking part in the cluster", "address", r.opts.Address, "why", why)
	}
	r.refused = why
}

// register upserts our row; the next listing learns its started_at.
func (r *Runner) register(ctx context.Context) error {
	r.ownStarted = time.Time{}
	return r.d.RegisterRunner(ctx, r.registerRow())
}

// checkOwnRow runs on every listing: our row's started_at changing without
// our registering again means a newer process registered at our address
// (we were frozen, and it took over). That process is the address's owner
// now: this one drops every shard and takes no further part.
func (r *Runner) checkOwnRow(row store.Runner) {
	if r.ownStarted.IsZero() {
		r.ownStarted = row.StartedAt
		return
	}
	if row.StartedAt.Equal(r.ownStarted) || r.superseded {
		return
	}
	r.superseded = true
	r.loseAll("a newer process registered at this runner's address")
	r.setRefused(fmt.Sprintf("a newer process (replica %s) registered at runner address %s after this one; this process takes no further part (restart it on another address)",
		row.ReplicaID, r.opts.Address))
}
