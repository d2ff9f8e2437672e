package memory

import (
	"context"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func copyMessage(m *store.Message) store.Message {
	c := *m
	c.Payload = slices.Clone(m.Payload)
	c.Headers = maps.Clone(m.Headers)
	return c
}

func (s *Store) Enqueue(_ context.Context, m *store.Message, claim *store.EnqueueClaim) (store.EnqueueResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enqueueLocked(m, claim), nil
}

func (s *Store) enqueueLocked(m *store.Message, claim *store.EnqueueClaim) store.EnqueueResult {
	if m.DedupeKey != "" {
		if id, ok := s.dedupe[m.DedupeKey]; ok {
			res := store.EnqueueResult{ID: id, Duplicate: true}
			if r := s.replies[id]; r != nil {
				c := *r
				res.Reply = &c
			}
			return res
		}
	}
	now := s.now()
	s.nextID++
	c := copyMessage(m)
	c.ID = s.nextID
	c.CreatedAt = now
	switch {
	case !m.DeliverAt.IsZero():
		c.DeliverAt = m.DeliverAt
	case m.Delay > 0:
		c.DeliverAt = now.Add(m.Delay)
	default:
		c.DeliverAt = now
	}
	c.State = store.StatePending
	c.ClaimedBy, c.ClaimEpoch, c.ClaimExpiresAt, c.Attempts, c.LastError = "", 0, time.Time{}, 0, ""
	res := store.EnqueueResult{ID: c.ID}
	if claim != nil && !c.DeliverAt.After(now) && s.ownsLocked(c.Shard, claim.Owner, claim.Epoch) {
		c.State = store.StateClaimed
		c.ClaimedBy, c.ClaimEpoch, c.ClaimExpiresAt, c.Attempts = claim.Owner, claim.Epoch, now.Add(claim.ClaimTTL), 1
		res.ClaimedEpoch = claim.Epoch
	}
	s.messages[c.ID] = &c
	s.order = append(s.order, c.ID)
	if c.DedupeKey != "" {
		s.dedupe[c.DedupeKey] = c.ID
	}
	m.ID, m.DeliverAt, m.State, m.CreatedAt = c.ID, c.DeliverAt, c.State, c.CreatedAt
	return res
}

// voidClaimLocked reports whether a claimed message's claim no longer counts.
func (s *Store) voidClaimLocked(m *store.Message, now time.Time) bool {
	if !now.Before(m.ClaimExpiresAt) {
		return true
	}
	l := s.locks[m.Shard]
	return l == nil || l.Epoch > m.ClaimEpoch
}

func (s *Store) deliverableLocked(m *store.Message, now time.Time) bool {
	if m.DeliverAt.After(now) {
		return false
	}
	switch m.State {
	case store.StatePending:
		return true
	case store.StateClaimed:
		return s.voidClaimLocked(m, now)
	}
	return false
}

func (s *Store) Claim(_ context.Context, req store.ClaimRequest) ([]store.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(req.Types) == 0 || len(req.Shards) == 0 || req.Limit <= 0 {
		return nil, nil
	}
	now := s.now()
	epochs := map[string]int64{}
	for _, sh := range req.Shards {
		if e := s.ownerEpochLocked(sh, req.Owner); e > 0 {
			epochs[sh] = e
		}
	}
	var out []store.Message
	for _, id := range s.order {
		m := s.messages[id]
		if m == nil || !slices.Contains(req.Types, m.EntityType) {
			continue
		}
		epoch, ok := epochs[m.Shard]
		if !ok || !s.deliverableLocked(m, now) {
			continue
		}
		m.State = store.StateClaimed
		m.ClaimedBy, m.ClaimEpoch, m.ClaimExpiresAt = req.Owner, epoch, now.Add(req.ClaimTTL)
		m.Attempts++
		out = append(out, copyMessage(m))
		if len(out) >= req.Limit {
			break
		}
	}
	return out, nil
}

// liveClaimLocked reports whether id is claimed under f, still live, and the
// shard row names f at that epoch (the fence for writes).
func (s *Store) liveClaimLocked(id int64, f store.Fence, now time.Time) (*store.Message, bool) {
	m := s.messages[id]
	if m == nil || m.State != store.StateClaimed || m.ClaimedBy != f.Owner || m.ClaimEpoch != f.Epoch {
		return m, false
	}
	return m, s.ownsLocked(m.Shard, f.Owner, f.Epoch)
}

func (s *Store) Complete(_ context.Context, c store.Completion) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	m, ok := s.liveClaimLocked(c.MessageID, c.Fence, now)
	if !ok {
		return fenced(c.MessageID, m)
	}
	m.State, m.ProcessedAt = store.StateProcessed, now
	m.ClaimExpiresAt = time.Time{}
	if _, exists := s.replies[m.ID]; !exists {
		s.replies[m.ID] = &store.Reply{RequestID: m.ID, Payload: slices.Clone(c.Payload), Error: slices.Clone(c.Error), CreatedAt: now}
	}
	return nil
}

func fenced(id int64, m *store.Message) error {
	if m == nil {
		return errs.New(errs.CodeNotFound, "message %d not found", id)
	}
	return errs.New(errs.CodeFenced, "message %d: claim no longer held (state %s, claimed by %q at epoch %d)", id, m.State, m.ClaimedBy, m.ClaimEpoch)
}

func (s *Store) Release(_ context.Context, f store.Fence, ids []int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		m := s.messages[id]
		if m == nil || m.State != store.StateClaimed || m.ClaimedBy != f.Owner || m.ClaimEpoch != f.Epoch {
			continue
		}
		m.State, m.ClaimedBy, m.ClaimEpoch, m.ClaimExpiresAt = store.StatePending, "", 0, time.Time{}
	}
	return nil
}

func (s *Store) RecordAttempt(_ context.Context, f store.Fence, id int64, lastError string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[id]
	if m == nil || m.State != store.StateClaimed || m.ClaimedBy != f.Owner || m.ClaimEpoch != f.Epoch {
		return fenced(id, m)
	}
	m.Attempts++
	m.LastError = lastError
	return nil
}

func (s *Store) DeadLetter(_ context.Context, f store.Fence, shard string, id int64, lastError string, replyErr []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	m, ok := s.liveClaimLocked(id, f, now)
	if !ok {
		return fenced(id, m)
	}
	m.State, m.LastError, m.ProcessedAt, m.ClaimExpiresAt = store.StateDead, lastError, now, time.Time{}
	if _, exists := s.replies[id]; !exists {
		s.replies[id] = &store.Reply{RequestID: id, Error: slices.Clone(replyErr), CreatedAt: now}
	}
	return nil
}

func (s *Store) ReplayDead(_ context.Context, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[id]
	if m == nil || m.State != store.StateDead {
		return errs.New(errs.CodeNotFound, "no dead message %d", id)
	}
	m.State, m.Attempts, m.ClaimedBy, m.ClaimEpoch, m.ClaimExpiresAt, m.ProcessedAt = store.StatePending, 0, "", 0, time.Time{}, time.Time{}
	m.DeliverAt = s.now()
	delete(s.replies, id)
	return nil
}

func (s *Store) ExtendClaims(_ context.Context, owner string, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp := s.now().Add(ttl)
	for _, m := range s.messages {
		if m.State == store.StateClaimed && m.ClaimedBy == owner {
			m.ClaimExpiresAt = exp
		}
	}
	return nil
}

func (s *Store) NextDelivery(_ context.Context, owner string, types []string) (time.Duration, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var best time.Time
	for _, m := range s.messages {
		if m.State != store.StatePending || !m.DeliverAt.After(now) || !slices.Contains(types, m.EntityType) {
			continue
		}
		if s.ownerEpochLocked(m.Shard, owner) == 0 {
			continue
		}
		if best.IsZero() || m.DeliverAt.Before(best) {
			best = m.DeliverAt
		}
	}
	if best.IsZero() {
		return 0, false, nil
	}
	return best.Sub(now), true, nil
}

func (s *Store) GetMessage(_ context.Context, id int64) (store.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[id]
	if m == nil {
		return store.Message{}, errs.New(errs.CodeNotFound, "message %d not found", id)
	}
	return copyMessage(m), nil
}

func (s *Store) ListMessages(_ context.Context, f store.MessageFilter) ([]store.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Message
	for _, id := range s.order {
		m := s.messages[id]
		if (f.State != "" && m.State != f.State) || (f.EntityType != "" && m.EntityType != f.EntityType) || (f.EntityID != "" && m.EntityID != f.EntityID) {
			continue
		}
		out = append(out, copyMessage(m))
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	return out, nil
}

func (s *Store) GetReply(_ context.Context, id int64) (*store.Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replies[id]
	if r == nil {
		return nil, nil
	}
	c := *r
	return &c, nil
}

func (s *Store) DrainStats(context.Context) (store.DrainStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	st := store.DrainStats{Now: now}
	shards := map[string]*store.ShardDrain{}
	types := map[string]*store.TypeBacklog{}
	shard := func(id string) *store.ShardDrain {
		d := shards[id]
		if d == nil {
			d = &store.ShardDrain{Shard: id}
			if l := s.locks[id]; l != nil {
				d.Owner = l.Owner
			}
			shards[id] = d
		}
		return d
	}
	for _, m := range s.messages {
		switch {
		case m.State == store.StateDead:
			st.Dead++
			shard(m.Shard).Dead++
		case s.deliverableLocked(m, now):
			age := now.Sub(m.DeliverAt)
			d := shard(m.Shard)
			d.Pending++
			d.OldestDeliverable = max(d.OldestDeliverable, age)
			d.AddShardType(m.EntityType, 1, age)
			t := types[m.EntityType]
			if t == nil {
				t = &store.TypeBacklog{EntityType: m.EntityType}
				types[m.EntityType] = t
			}
			t.Pending++
			t.OldestDeliverable = max(t.OldestDeliverable, age)
			st.OldestUndelivered = max(st.OldestUndelivered, age)
		case m.State == store.StateClaimed:
			shard(m.Shard).Claimed++
			st.OldestUndelivered = max(st.OldestUndelivered, now.Sub(m.DeliverAt))
		}
	}
	for _, d := range shards {
		st.Shards = append(st.Shards, *d)
	}
	for _, t := range types {
		st.Types = append(st.Types, *t)
	}
	sort.Slice(st.Shards, func(i, j int) bool { return st.Shards[i].Shard < st.Shards[j].Shard })
	sort.Slice(st.Types, func(i, j int) bool { return st.Types[i].EntityType < st.Types[j].EntityType })
	return st, nil
}
