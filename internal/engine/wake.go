package engine

// Waking a shard's owner after a write: ourselves, or a peer by runner RPC
// when the store does not push wake-ups. The peer is named by the runner's
// view of the cluster (its last listing), and when that view has no owner,
// names ourselves without our holding the shard, or names a runner that
// answers that it holds none of it (right after boot, during a handover),
// by the lock ledger (a copy that names a holder serves for ledgerTTL).

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// ledgerTTL bounds ledger reads for wake-ups: a burst of sends during a
// handover costs one ShardLocks call per interval, not one per send.
const ledgerTTL = 200 * time.Millisecond

// WakeShard makes the shard's owner read now: ourselves, or a peer by RPC
// unless the store's own feed wakes it.
func (e *Engine) WakeShard(shard string) {
	if e.deliv.Epoch(shard) > 0 || !e.cfg.Clustered() {
		e.deliv.Wake()
		return
	}
	e.wakeOwner(shard)
}

// wakeOwner tells the shard's owner to read, unless the store's own feed
// does that (PostgreSQL NOTIFY). Best effort: the owner polls anyway.
func (e *Engine) wakeOwner(shard string) {
	if e.wakes {
		return
	}
	view := e.runner.Owner(shard)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		refused := false
		if view != "" && view != e.address {
			err := e.client.Wake(ctx, view, []string{shard})
			if err == nil {
				return
			}
			refused = true
			if !errors.Is(err, errs.ErrNotOwner) {
				e.log.Debug("runner rpc: wake failed; asking the ledger", "owner", view, "err", err)
			}
		}
		// After a refusal the copy may be the one that named view: read again.
		holder := e.ledger.owner(ctx, e.d, shard, refused)
		if holder == "" || holder == view || holder == e.address {
			return
		}
		if err := e.client.Wake(ctx, holder, []string{shard}); err != nil {
			e.log.Debug("runner rpc: wake failed; the owner will poll", "owner", holder, "err", err)
		}
	}()
}

// ledgerView is a short-lived copy of the lock ledger's live holders,
// shared by every wake-up that needs one.
type ledgerView struct {
	mu     sync.Mutex
	at     time.Time // when owners was read; zero: never
	owners map[string]string
}

// owner is the live holder of shard in the ledger, or "". A copy younger
// than ledgerTTL answers when it names a holder and fresh is false; a copy
// with no holder for shard does not, since a shard acquired since the copy
// was read would otherwise go unwoken until its owner's poll. A read made
// after this call began answers in every case: callers waiting during a
// read share it, so a burst of sends costs one read.
func (v *ledgerView) owner(ctx context.Context, d store.Driver, shard string, fresh bool) string {
	asked := time.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.at.After(asked) {
		return v.owners[shard]
	}
	if h := v.owners[shard]; h != "" && !fresh && time.Since(v.at) < ledgerTTL {
		return h
	}
	locks, err := d.ShardLocks(ctx)
	v.at, v.owners = time.Now(), make(map[string]string, len(locks))
	if err == nil {
		for _, l := range locks {
			if l.Owner != "" && !l.Expired {
				v.owners[l.Shard] = l.Owner
			}
		}
	}
	return v.owners[shard]
}
