package store

// Queues: flow control across the fleet. A run started on a queue is
// stored queued, without a start message; a Dequeue, serialized per queue
// across every instance, moves as many queued runs to running as the
// queue's stored limits allow and enqueues their start messages in the same
// transaction. A dequeued run holds its slot until it ends: the slots in
// use are the queue's runs that are running or suspended, counted from the
// run rows themselves, so no slot can leak when an instance dies (its runs
// go on elsewhere, holding their slots, and free them when they end) and
// none is handed out twice (a run's end is a fenced write).

import (
	"context"
	"sort"
	"time"
)

// ExecQueued is the status of a run waiting on its queue for a slot.
const ExecQueued ExecStatus = "queued"

// WorkflowEntityPrefix prefixes the entity type of every workflow.
const WorkflowEntityPrefix = "workflow/"

// TagStart is the tag of a run's start message.
const TagStart = "start"

// StartMessageOf is the start message of run x, as StartExecution enqueues
// it for a run that is not queued and Dequeue for one that was.
func StartMessageOf(x Execution) *Message {
	return &Message{Shard: x.Shard, EntityType: WorkflowEntityPrefix + x.Name, EntityID: x.ID, Tag: TagStart, DedupeKey: RunStartKey(x.ID)}
}

// QueueLimits are a queue's limits as stored, shared by the fleet. A zero
// limit is no limit.
type QueueLimits struct {
	Name string
	// Concurrency: runs of the queue running or suspended at once, fleet-wide.
	Concurrency int
	// WorkerConcurrency: the same, per runner holding the runs' shards.
	WorkerConcurrency int
	// PartitionConcurrency: the same, per partition key, fleet-wide.
	PartitionConcurrency int
	// RateLimit dequeues at most, in any window of RatePeriod.
	RateLimit  int
	RatePeriod time.Duration
}

// Queues is the group of flow control: queue limits, and the dequeue that
// hands queued runs their slots.
//
// A run is put on a queue by StartExecution (and its batch and transaction
// twins) with Execution.Queue set: the store inserts it with status
// ExecQueued, its Queue, Partition, Priority and StartAt, and enqueues no
// start message (the request's start message is nil).
type Queues interface {
	// PutQueue stores q's limits, replacing those stored, and reports
	// whether they changed (true for a queue stored the first time).
	PutQueue(ctx context.Context, q QueueLimits) (changed bool, err error)
	// ListQueues returns every stored queue, by name.
	ListQueues(ctx context.Context) ([]QueueLimits, error)
	// Dequeue gives queued runs of req.Queue their slots: as many as its
	// stored limits allow (none when no limits are stored), at most
	// req.Max (0: no cap). A run is eligible when its StartAt is not after
	// the store's now. Order: lower Priority first; within a priority,
	// partitions in turn (each partition's first eligible run, then each
	// one's second, …; runs without a partition key form one partition),
	// and within a partition by creation (CreatedAt, then ID). A run whose
	// partition has PartitionConcurrency runs holding slots, or whose shard's
	// holder (the lock row's owner) has WorkerConcurrency, is passed over.
	// At most RateLimit runs of the queue are dequeued in any window of
	// RatePeriod, by the store's clock.
	//
	// Each dequeued run becomes ExecRunning with DequeuedAt now, and its
	// start message (StartMessageOf) is enqueued deliverable now, all in
	// one transaction that is serialized against every other Dequeue of the
	// queue, from any instance (on Galera too: it writes the queue's row).
	Dequeue(ctx context.Context, req DequeueRequest) ([]Dequeued, error)
	// QueueStats counts a queue's runs, by the store's clock.
	QueueStats(ctx context.Context, queue string) (QueueStats, error)
}

// DequeueRequest asks Dequeue for up to Max runs of Queue (0: no cap).
type DequeueRequest struct {
	Queue string
	Max   int
}

// Dequeued is a run Dequeue gave a slot, and its start message.
type Dequeued struct {
	ExecutionID string
	Name        string
	Shard       string
	MessageID   int64
}

// QueueStats is a queue's state at one moment.
type QueueStats struct {
	Name string
	// Queued counts runs waiting (StartAt in the future included); Due
	// those of them eligible now.
	Queued, Due int
	// Active counts runs holding a slot (running or suspended).
	Active int
	// OldestDue is the age of the oldest eligible queued run (by its
	// StartAt, or CreatedAt when it has none).
	OldestDue time.Duration
	// RecentDequeues counts dequeues in the last RatePeriod (the last
	// minute for a queue without a rate limit).
	RecentDequeues int
	// Partitions are the partitions with the most runs queued or holding a
	// slot, busiest first, at most 5.
	Partitions []PartitionCount
}

// PartitionCount is one partition's runs in QueueStats.
type PartitionCount struct {
	Key            string
	Queued, Active int
}

// QueueRoom is how many runs a Dequeue may give slots now under l, with
// active runs holding slots and recent dequeued in the rate window, capped
// at max (0: no cap). -1 is no limit at all.
func QueueRoom(l QueueLimits, active, recent, max int) int {
	room := -1
	lower := func(n int) {
		n = maxInt(n, 0)
		if room < 0 || n < room {
			room = n
		}
	}
	if l.Concurrency > 0 {
		lower(l.Concurrency - active)
	}
	if l.RateLimit > 0 && l.RatePeriod > 0 {
		lower(l.RateLimit - recent)
	}
	if max > 0 {
		lower(max)
	}
	return room
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// BusiestPartitions orders the counted partitions busiest first (queued
// and active together, then by key) and keeps at most 5.
func BusiestPartitions(parts map[string]*PartitionCount) []PartitionCount {
	out := make([]PartitionCount, 0, len(parts))
	for _, p := range parts {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Queued+out[i].Active, out[j].Queued+out[j].Active
		if a != b {
			return a > b
		}
		return out[i].Key < out[j].Key
	})
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}
