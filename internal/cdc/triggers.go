// The life of the PostgreSQL change triggers: installed with the first
// subscription to a table on any instance, removed when the last one ends.
//
// Instances find out whether anyone else still subscribes through
// PostgreSQL itself: each holds a shared session advisory lock per
// subscribed table on its own connection (outside the pool, named
// voltro-cdc-subs:<replica>), taken before it installs the trigger. The
// instance whose last subscription ends drops its shared lock and tries the
// exclusive one: it gets it only when nobody else holds the shared lock,
// and then removes the triggers while holding it, so a subscriber arriving
// meanwhile waits and installs them again. A crashed instance's locks end
// with its connection.

package cdc

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// DefaultTriggerLinger is how long triggers stay after the last local
// subscription of a table ends, so a subscriber that comes straight back
// (a reconnecting browser) does not cost two DDL statements on the table.
const DefaultTriggerLinger = 10 * time.Second

var errClosed = errors.New("change feed closed")

// trigState is the feed's side of the trigger protocol, guarded by
// Feed.trigMu.
type trigState struct {
	conn   store.SubscriberLocks  // holds the shared locks; nil until needed
	subs   map[string]int         // table -> live local subscriptions
	held   map[string]bool        // table -> shared lock held, trigger installed
	linger map[string]*time.Timer // table -> pending removal
	closed bool
}

func (f *Feed) linger() time.Duration {
	switch {
	case f.cfg.TriggerLinger < 0:
		return 0
	case f.cfg.TriggerLinger == 0:
		return DefaultTriggerLinger
	}
	return f.cfg.TriggerLinger
}

// holdTrigger counts one more local subscription of table, taking the
// shared lock and installing the trigger for the first.
func (f *Feed) holdTrigger(ctx context.Context, table string) error {
	f.trigMu.Lock()
	defer f.trigMu.Unlock()
	t := &f.trig
	if t.closed {
		return errClosed
	}
	if tm := t.linger[table]; tm != nil {
		tm.Stop()
		delete(t.linger, table)
	}
	if !t.held[table] {
		if err := f.acquire(ctx, table); err != nil {
			return err
		}
	}
	t.subs[table]++
	return nil
}

// acquire takes the shared lock of table, then installs its trigger.
func (f *Feed) acquire(ctx context.Context, table string) error {
	t := &f.trig
	if t.conn == nil || t.conn.IsClosed() {
		conn, err := f.notify.Locks(ctx, f.dsn, "voltro-cdc-subs:"+f.replicaID)
		if err != nil {
			return err
		}
		t.conn = conn
	}
	if err := t.conn.HoldShared(ctx, table); err != nil {
		return err
	}
	pk, err := f.primaryKey(ctx, f.db, table)
	if err == nil {
		err = f.notify.Install(ctx, f.db, table, pk)
	}
	if err != nil {
		_ = t.conn.ReleaseShared(context.WithoutCancel(ctx), table)
		return err
	}
	t.held[table] = true
	return nil
}

// releaseTrigger counts one local subscription of table less; after the
// last (and the linger), the triggers go if no other instance holds them.
func (f *Feed) releaseTrigger(table string) {
	f.trigMu.Lock()
	defer f.trigMu.Unlock()
	t := &f.trig
	if t.closed || t.subs[table] == 0 {
		return
	}
	if t.subs[table]--; t.subs[table] > 0 {
		return
	}
	delete(t.subs, table)
	d := f.linger()
	if d == 0 {
		f.remove(table)
		return
	}
	var tm *time.Timer
	tm = time.AfterFunc(d, func() {
		f.trigMu.Lock()
		defer f.trigMu.Unlock()
		if t.linger[table] == tm && t.subs[table] == 0 && !t.closed {
			delete(t.linger, table)
			f.remove(table)
		}
	})
	t.linger[table] = tm
}

// remove drops the shared lock of table and, if no instance holds one any
// more, the triggers.
func (f *Feed) remove(table string) {
	t := &f.trig
	if !t.held[table] {
		return
	}
	delete(t.held, table)
	if t.conn == nil || t.conn.IsClosed() {
		return // the locks went with the connection; nothing to prove nobody else subscribes
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := t.conn.ReleaseShared(ctx, table); err != nil {
		f.log.Warn("change trigger: releasing the subscription lock failed; trigger left in place", "table", table, "err", err)
		return
	}
	alone, err := t.conn.TryExclusive(ctx, table)
	if err != nil || !alone {
		if err != nil {
			f.log.Warn("change trigger: checking for other subscribers failed; trigger left in place", "table", table, "err", err)
		}
		return // another instance still subscribes
	}
	defer func() {
		_ = t.conn.ReleaseExclusive(ctx, table)
	}()
	if err := f.notify.Uninstall(ctx, f.db, table); err != nil {
		f.log.Warn("change trigger: removal failed", "table", table, "err", err)
		return
	}
	f.log.Debug("change trigger removed: no subscriber left", "table", table)
}

// closeTriggers removes every trigger this feed still holds, at once (no
// linger), and closes the lock connection.
func (f *Feed) closeTriggers() {
	f.trigMu.Lock()
	defer f.trigMu.Unlock()
	t := &f.trig
	if t.closed {
		return
	}
	t.closed = true
	for table, tm := range t.linger {
		tm.Stop()
		delete(t.linger, table)
	}
	for table := range t.held {
		f.remove(table)
	}
	if t.conn != nil {
		_ = t.conn.Close(context.Background())
	}
}

// rehold takes the shared locks and installs the triggers again after the
// listener lost its connection: the server may have restarted, and then the
// lock connection's locks are gone and another instance may have removed
// the triggers meanwhile.
func (f *Feed) rehold() {
	f.trigMu.Lock()
	defer f.trigMu.Unlock()
	t := &f.trig
	if t.closed || len(t.held) == 0 {
		return
	}
	if t.conn != nil {
		_ = t.conn.Close(context.Background())
		t.conn = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tables := slices.Collect(maps.Keys(t.held))
	clear(t.held)
	for _, table := range tables {
		if err := f.acquire(ctx, table); err != nil {
			f.log.Warn("change trigger: re-installing after a reconnect failed; changes of the table may be missed", "table", table, "err", err)
		}
	}
}
