package memory

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// Store keeps everything in maps behind one mutex.
type Store struct {
	mu       sync.Mutex
	now      func() time.Time
	config   *store.ClusterConfig
	secret   string
	runners  map[string]*store.Runner
	locks    map[string]*lockRow
	advisory map[string]*locker // shard -> session holding the advisory lock
	presence map[string]*locker // runner -> advisory session holding its presence
	messages map[int64]*store.Message
	order    []int64 // message ids in insertion order
	dedupe   map[string]int64
	replies  map[int64]*store.Reply
	nextID   int64
	closed   bool
	wfs      *wfState
	scheds   *schedState
	queues   map[string]store.QueueLimits
}

type lockRow struct {
	store.ShardLock
}

var _ store.Driver = (*Store)(nil)

// Option configures a memory store.
type Option func(*Store)

// WithClock makes now the store's clock: every lease, claim, delivery time,
// schedule stamp and retention cutoff reads it instead of time.Now. Tests
// pass a controllable clock to move time without sleeping.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		now:      time.Now,
		runners:  map[string]*store.Runner{},
		locks:    map[string]*lockRow{},
		advisory: map[string]*locker{},
		presence: map[string]*locker{},
		messages: map[int64]*store.Message{},
		dedupe:   map[string]int64{},
		replies:  map[int64]*store.Reply{},
		queues:   map[string]store.QueueLimits{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Store) Dialect() store.Dialect                 { return store.Memory }
func (s *Store) Migrate(context.Context) error          { return nil }
func (s *Store) Now(context.Context) (time.Time, error) { return s.now(), nil }

func (s *Store) Ping(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errs.New(errs.CodeUnavailable, "memory store is closed")
	}
	return nil
}

func (s *Store) ResolveLockMode(_ context.Context, requested store.LockMode) (store.LockMode, string, error) {
	switch requested {
	case store.LockAuto, "":
		return store.LockAdvisory, "memory store: in-process locks", nil
	case store.LockRow, store.LockAdvisory:
		return requested, "memory store: set explicitly", nil
	}
	return "", "", errs.New(errs.CodeInvalidConfig, "unknown shard lock mode %q (allowed: auto, row, advisory)", requested)
}

func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

func (s *Store) EnsureClusterConfig(_ context.Context, cfg store.ClusterConfig) (store.ClusterConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.config == nil {
		c := store.ClusterConfig{ShardCount: cfg.ShardCount, Groups: slices.Clone(cfg.Groups)}
		s.config = &c
	}
	return store.ClusterConfig{ShardCount: s.config.ShardCount, Groups: slices.Clone(s.config.Groups)}, nil
}

func (s *Store) RegisterRunner(_ context.Context, r store.Runner) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	c := r
	c.Groups = slices.Clone(r.Groups)
	c.EntityTypes = slices.Clone(r.EntityTypes)
	c.StartedAt, c.LastHeartbeat = now, now
	s.runners[r.Address] = &c
	return nil
}

func (s *Store) ListRunners(context.Context) ([]store.Runner, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	out := make([]store.Runner, 0, len(s.runners))
	for _, r := range s.runners {
		c := *r
		c.Groups = slices.Clone(r.Groups)
		c.EntityTypes = slices.Clone(r.EntityTypes)
		c.HeartbeatAge = now.Sub(r.LastHeartbeat)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}

func (s *Store) DeleteRunner(_ context.Context, address string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.runners, address)
	return nil
}

func (s *Store) ShardLocks(context.Context) ([]store.ShardLock, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	out := make([]store.ShardLock, 0, len(s.locks))
	for _, l := range s.locks {
		c := l.ShardLock
		c.Expired = !c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Shard < out[j].Shard })
	return out, nil
}

// ownsLocked reports whether the lock row of shard names owner at epoch.
func (s *Store) ownsLocked(shard, owner string, epoch int64) bool {
	l := s.locks[shard]
	return l != nil && l.Owner == owner && l.Epoch == epoch
}

// ownerEpochLocked returns the epoch at which the lock row names owner, or 0.
func (s *Store) ownerEpochLocked(shard, owner string) int64 {
	l := s.locks[shard]
	if l == nil || l.Owner != owner || owner == "" {
		return 0
	}
	return l.Epoch
}

// EnsureClusterSecret keeps the secret in the process: a memory store is
// shared only by engines of this process.
func (s *Store) EnsureClusterSecret(_ context.Context, candidate string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secret == "" {
		s.secret = candidate
	}
	return s.secret, nil
}

// Capabilities: the memory store has none beyond the contract.
func (s *Store) Capabilities() store.Capabilities { return store.Capabilities{} }
