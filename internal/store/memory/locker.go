package memory

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// locker is a session on the memory store. Advisory mode models session
// locks (held until Release or Close); row mode models leases that expire.
type locker struct {
	s      *Store
	mode   store.LockMode
	owner  string
	closed bool
}

func (s *Store) NewLocker(_ context.Context, mode store.LockMode, owner string) (store.Locker, error) {
	if mode != store.LockRow && mode != store.LockAdvisory {
		return nil, errs.New(errs.CodeInvalidArgument, "locker mode must be resolved, got %q", mode)
	}
	l := &locker{s: s, mode: mode, owner: owner}
	if mode == store.LockAdvisory {
		s.mu.Lock()
		if s.presence[owner] == nil {
			s.presence[owner] = l // held until Close, as a session lock is
		}
		s.mu.Unlock()
	}
	return l, nil
}

func (l *locker) Mode() store.LockMode { return l.mode }

func (l *locker) check() error {
	if l.closed {
		return errs.New(errs.CodeUnavailable, "locker is closed")
	}
	if l.s.closed {
		return errs.New(errs.CodeUnavailable, "memory store is closed")
	}
	return nil
}

func (l *locker) Acquire(_ context.Context, shard string, ttl time.Duration) (int64, bool, error) {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.check(); err != nil {
		return 0, false, err
	}
	now := s.now()
	row := s.locks[shard]
	switch l.mode {
	case store.LockAdvisory:
		if h := s.advisory[shard]; h != nil && h != l {
			return 0, false, nil
		}
		s.advisory[shard] = l
	case store.LockRow:
		if row != nil && row.Owner != "" && row.Owner != l.owner && now.Before(row.ExpiresAt) {
			return 0, false, nil
		}
	}
	if row == nil {
		row = &lockRow{ShardLock: store.ShardLock{Shard: shard}}
		s.locks[shard] = row
	}
	row.Owner = l.owner
	row.Epoch++
	row.AcquiredAt = now
	row.ExpiresAt = time.Time{}
	if l.mode == store.LockRow {
		row.ExpiresAt = now.Add(ttl)
	}
	return row.Epoch, true, nil
}

func (l *locker) Refresh(_ context.Context, held map[string]int64, ttl time.Duration) ([]string, error) {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	now := s.now()
	var lost []string
	for shard, epoch := range held {
		row := s.locks[shard]
		if row == nil || row.Owner != l.owner || row.Epoch != epoch {
			lost = append(lost, shard)
			continue
		}
		if l.mode == store.LockAdvisory && s.advisory[shard] != l {
			lost = append(lost, shard)
			continue
		}
		if l.mode == store.LockRow {
			row.ExpiresAt = now.Add(ttl)
		}
	}
	return lost, nil
}

func (l *locker) Release(_ context.Context, shard string, epoch int64) error {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	l.releaseLocked(shard, epoch)
	return nil
}

func (l *locker) releaseLocked(shard string, epoch int64) {
	s := l.s
	if row := s.locks[shard]; row != nil && row.Owner == l.owner && (epoch == 0 || row.Epoch == epoch) {
		row.Owner = ""
		row.ExpiresAt = time.Time{}
	}
	if s.advisory[shard] == l {
		delete(s.advisory, shard)
	}
}

func (l *locker) Heartbeat(_ context.Context, address string) error {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	r := s.runners[address]
	if r == nil {
		return errs.New(errs.CodeNotFound, "runner %s is not registered", address)
	}
	r.LastHeartbeat = s.now()
	if l.mode == store.LockAdvisory && s.presence[l.owner] == nil {
		s.presence[l.owner] = l // an earlier session of this runner ended
	}
	return nil
}

// Close ends the session. Advisory locks go with it, as they do when a SQL
// session dies; the ledger rows keep the owner until someone re-acquires,
// exactly as on a SQL store after a crash.
func (l *locker) Close() error {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.closed {
		return nil
	}
	l.endLocked()
	return nil
}

// endLocked ends the session (s.mu held): its advisory locks and its
// presence go.
func (l *locker) endLocked() {
	s := l.s
	l.closed = true
	for shard, h := range s.advisory {
		if h == l {
			delete(s.advisory, shard)
		}
	}
	if s.presence[l.owner] == l {
		delete(s.presence, l.owner)
	}
}

// Crash simulates the death of the session's process: session locks vanish,
// ledger rows and leases stay. Tests use it; it is the same as Close here.
func (l *locker) Crash() { _ = l.Close() }

var _ store.Locker = (*locker)(nil)

func (l *locker) Survey(_ context.Context, shards []string) ([]store.ShardState, error) {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]store.ShardState, 0, len(shards))
	for _, sh := range shards {
		st := store.ShardState{Shard: sh, Free: true}
		if row := s.locks[sh]; row != nil {
			st.Owner, st.Epoch = row.Owner, row.Epoch
			switch l.mode {
			case store.LockAdvisory:
				st.Free = s.advisory[sh] == nil
			case store.LockRow:
				st.Free = row.Owner == "" || !now.Before(row.ExpiresAt)
			}
		} else if l.mode == store.LockAdvisory {
			st.Free = s.advisory[sh] == nil
		}
		out = append(out, st)
	}
	return out, nil
}

// Absent returns the runners among those given that no open advisory
// locker stands behind (store.PresenceProber); row mode has no sessions.
func (l *locker) Absent(_ context.Context, runners []string) ([]string, error) {
	if l.mode != store.LockAdvisory {
		return nil, nil
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	var out []string
	for _, r := range runners {
		if s.presence[r] == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// Present reports whether this locker holds its runner's presence (always,
// in row mode).
func (l *locker) Present() bool {
	if l.mode != store.LockAdvisory {
		return true
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.s.presence[l.owner] == l
}

// Fence ends every other session that holds runner's presence or a lock of
// one of shards (store.Fencer); row mode has none to end.
func (l *locker) Fence(_ context.Context, runner string, shards []string) (int, error) {
	if l.mode != store.LockAdvisory {
		return 0, nil
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.check(); err != nil {
		return 0, err
	}
	ended := map[*locker]bool{}
	if p := s.presence[runner]; p != nil && p != l {
		ended[p] = true
	}
	for _, sh := range shards {
		if h := s.advisory[sh]; h != nil && h != l {
			ended[h] = true
		}
	}
	for o := range ended {
		o.endLocked()
	}
	return len(ended), nil
}

// AcquireMany takes each shard in turn (store.OneByOne).
func (l *locker) AcquireMany(ctx context.Context, shards []string, ttl time.Duration) (map[string]int64, error) {
	return store.OneByOne{Acquire: l.Acquire, Release: l.Release}.AcquireMany(ctx, shards, ttl)
}

// ReleaseMany releases each shard in turn (store.OneByOne).
func (l *locker) ReleaseMany(ctx context.Context, held map[string]int64) error {
	return store.OneByOne{Acquire: l.Acquire, Release: l.Release}.ReleaseMany(ctx, held)
}
