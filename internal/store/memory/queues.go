package memory

// Queues in memory: the store's one mutex serializes every Dequeue.

import (
	"context"
	"sort"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func (s *Store) PutQueue(_ context.Context, q store.QueueLimits) (bool, error) {
	if q.Name == "" {
		return false, errs.New(errs.CodeInvalidArgument, "queue name is empty")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.queues[q.Name]
	s.queues[q.Name] = q
	return !ok || old != q, nil
}

func (s *Store) ListQueues(context.Context) ([]store.QueueLimits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.QueueLimits, 0, len(s.queues))
	for _, q := range s.queues {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// queueRunsLocked returns the runs of queue, in creation order.
func (s *Store) queueRunsLocked(queue string) []*store.Execution {
	w := s.wf()
	var out []*store.Execution
	for _, id := range w.sequence {
		if x := w.execs[id]; x.Queue == queue {
			out = append(out, x)
		}
	}
	return out
}

func holdsSlot(x *store.Execution) bool {
	return x.Status == store.ExecRunning || x.Status == store.ExecSuspended
}

func (s *Store) Dequeue(_ context.Context, req store.DequeueRequest) ([]store.Dequeued, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.queues[req.Queue]
	if !ok {
		return nil, nil
	}
	now := s.now()
	runs := s.queueRunsLocked(req.Queue)
	active, recent := 0, 0
	byPartition, byOwner := map[string]int{}, map[string]int{}
	var queued []*store.Execution
	for _, x := range runs {
		if holdsSlot(x) && !x.DequeuedAt.IsZero() {
			active++
			byPartition[x.Partition]++
			byOwner[s.shardOwnerLocked(x.Shard)]++
		}
		if l.RateLimit > 0 && l.RatePeriod > 0 && !x.DequeuedAt.IsZero() && x.DequeuedAt.After(now.Add(-l.RatePeriod)) {
			recent++
		}
		if x.Status == store.ExecQueued && !x.StartAt.After(now) {
			queued = append(queued, x)
		}
	}
	room := store.QueueRoom(l, active, recent, req.Max)
	if room == 0 || len(queued) == 0 {
		return nil, nil
	}
	// Rank within each partition, then order by priority, rank, creation:
	// partitions take turns.
	rank := map[*store.Execution]int{}
	seen := map[string]int{}
	sorted := append([]*store.Execution(nil), queued...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Priority < sorted[j].Priority })
	for _, x := range sorted {
		seen[x.Partition]++
		rank[x] = seen[x.Partition]
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		return rank[a] < rank[b]
	})
	var out []store.Dequeued
	for _, x := range sorted {
		if room >= 0 && len(out) >= room {
			break
		}
		if l.PartitionConcurrency > 0 && byPartition[x.Partition] >= l.PartitionConcurrency {
			continue
		}
		owner := s.shardOwnerLocked(x.Shard)
		if l.WorkerConcurrency > 0 && byOwner[owner] >= l.WorkerConcurrency {
			continue
		}
		byPartition[x.Partition]++
		byOwner[owner]++
		x.Status, x.DequeuedAt, x.UpdatedAt = store.ExecRunning, now, now
		msg := store.StartMessageOf(*x)
		res := s.enqueueLocked(msg, nil)
		out = append(out, store.Dequeued{ExecutionID: x.ID, Name: x.Name, Shard: x.Shard, MessageID: res.ID})
	}
	return out, nil
}

// shardOwnerLocked is the runner the shard's lock row names ("" none).
func (s *Store) shardOwnerLocked(shard string) string {
	if l := s.locks[shard]; l != nil {
		return l.Owner
	}
	return ""
}

func (s *Store) QueueStats(_ context.Context, queue string) (store.QueueStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := store.QueueStats{Name: queue}
	now := s.now()
	period := time.Minute
	if l := s.queues[queue]; l.RateLimit > 0 && l.RatePeriod > 0 {
		period = l.RatePeriod
	}
	parts := map[string]*store.PartitionCount{}
	part := func(k string) *store.PartitionCount {
		p := parts[k]
		if p == nil {
			p = &store.PartitionCount{Key: k}
			parts[k] = p
		}
		return p
	}
	for _, x := range s.queueRunsLocked(queue) {
		switch {
		case x.Status == store.ExecQueued:
			st.Queued++
			part(x.Partition).Queued++
			if !x.StartAt.After(now) {
				st.Due++
				since := x.CreatedAt
				if !x.StartAt.IsZero() {
					since = x.StartAt
				}
				st.OldestDue = max(st.OldestDue, now.Sub(since))
			}
		case holdsSlot(x) && !x.DequeuedAt.IsZero():
			st.Active++
			part(x.Partition).Active++
		}
		if !x.DequeuedAt.IsZero() && x.DequeuedAt.After(now.Add(-period)) {
			st.RecentDequeues++
		}
	}
	st.Partitions = store.BusiestPartitions(parts)
	return st, nil
}
