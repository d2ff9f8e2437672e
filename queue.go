package voltro

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/workflow"
)

// Queue is a named queue of workflow runs whose limits hold across the
// whole fleet: at most so many runs active at once (overall, per instance,
// per partition key) and at most so many started per period. Register it
// on the instances that should enforce and serve it (App.Register), and
// start runs on it with OnQueue. See docs/queues.md.
type Queue struct {
	name string
	opts QueueOptions
}

// QueueOptions are a queue's limits; a zero limit is no limit.
type QueueOptions struct {
	// Concurrency: runs of the queue active at once, fleet-wide. A run is
	// active from its dequeue until it ends: a run that sleeps or waits
	// for a signal or a child keeps its slot.
	Concurrency int
	// WorkerConcurrency: the same, per instance (counted on the instance
	// holding the runs' shards).
	WorkerConcurrency int
	// PartitionConcurrency: the same, per partition key (WithPartitionKey),
	// fleet-wide.
	PartitionConcurrency int
	// RateLimit: at most Limit dequeues in any window of Period,
	// fleet-wide.
	RateLimit Rate
}

// Rate is Limit events per Period.
type Rate struct {
	Limit  int
	Period time.Duration
}

// NewQueue declares a queue. Its limits are stored for the fleet when it
// is registered (App.Register); the last registration's limits win, and a
// change is logged once.
func NewQueue(name string, o QueueOptions) *Queue { return &Queue{name: name, opts: o} }

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

func (q *Queue) limits() store.QueueLimits {
	return store.QueueLimits{Name: q.name, Concurrency: q.opts.Concurrency, WorkerConcurrency: q.opts.WorkerConcurrency,
		PartitionConcurrency: q.opts.PartitionConcurrency, RateLimit: q.opts.RateLimit.Limit, RatePeriod: q.opts.RateLimit.Period}
}

// queueRegisterTimeout bounds storing a queue's limits at registration.
const queueRegisterTimeout = 30 * time.Second

func (q *Queue) register(a *App) error {
	wf, err := a.workflows()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), queueRegisterTimeout)
	defer cancel()
	return wf.RegisterQueue(ctx, q.limits())
}

// OnQueue starts the run on queue q: it is queued (StatusQueued) until
// the queue's limits give it a slot. q need not be registered where the
// run starts, only somewhere in the fleet.
func OnQueue(q *Queue) StartOption {
	return func(o *startOptions) {
		if q != nil {
			o.Queue = q.name
		}
	}
}

// WithPartitionKey places a queued run in a partition (a tenant, a
// customer): QueueOptions.PartitionConcurrency limits each partition, and
// partitions take turns for the queue's slots. It needs OnQueue.
func WithPartitionKey(key string) StartOption { return func(o *startOptions) { o.Partition = key } }

// WithPriority orders a queued run: a lower value is dequeued first, FIFO
// within a priority (the default is 0). It needs OnQueue.
func WithPriority(p int) StartOption { return func(o *startOptions) { o.Priority = p } }

// StartAt defers the run's start until t: durably, across restarts and
// failover. A queued run is dequeued no earlier than t.
func StartAt(t time.Time) StartOption {
	return func(o *startOptions) { o.StartAt = t; o.StartAfter = 0 }
}

// StartAfter defers the run's start by d from now (StartAt).
func StartAfter(d time.Duration) StartOption {
	return func(o *startOptions) { o.StartAfter = d; o.StartAt = time.Time{} }
}

// Queues lists the queues stored for the fleet, by name.
func (a *App) Queues(ctx context.Context) ([]QueueInfo, error) {
	return listQueues(ctx, a.in.Workflows)
}

// Queues lists the queues stored for the fleet, by name.
func (c *Client) Queues(ctx context.Context) ([]QueueInfo, error) { return listQueues(ctx, c.wf) }

// QueueInfo is a queue's stored limits and its runs at one moment.
type QueueInfo struct {
	Name    string       `json:"name"`
	Options QueueOptions `json:"options"`
	// Queued counts runs waiting for a slot (Due of them eligible now,
	// the others deferred by StartAt); Active those holding one.
	Queued int `json:"queued"`
	Due    int `json:"due"`
	Active int `json:"active"`
	// OldestDue is how long the oldest eligible run has waited.
	OldestDue time.Duration `json:"oldestDue"`
	// RecentDequeues counts dequeues in the last rate period (the last
	// minute for a queue without a rate limit).
	RecentDequeues int `json:"recentDequeues"`
	// Partitions are the busiest partitions, at most 5.
	Partitions []QueuePartition `json:"partitions,omitempty"`
}

// QueuePartition is one partition's runs in QueueInfo.
type QueuePartition struct {
	Key    string `json:"key"`
	Queued int    `json:"queued"`
	Active int    `json:"active"`
}

func listQueues(ctx context.Context, wf *workflow.Engine) ([]QueueInfo, error) {
	ls, err := wf.Queues(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]QueueInfo, 0, len(ls))
	for _, l := range ls {
		st, err := wf.QueueStats(ctx, l.Name)
		if err != nil {
			return nil, err
		}
		qi := QueueInfo{Name: l.Name, Queued: st.Queued, Due: st.Due, Active: st.Active, OldestDue: st.OldestDue, RecentDequeues: st.RecentDequeues,
			Options: QueueOptions{Concurrency: l.Concurrency, WorkerConcurrency: l.WorkerConcurrency, PartitionConcurrency: l.PartitionConcurrency,
				RateLimit: Rate{Limit: l.RateLimit, Period: l.RatePeriod}}}
		for _, p := range st.Partitions {
			qi.Partitions = append(qi.Partitions, QueuePartition{Key: p.Key, Queued: p.Queued, Active: p.Active})
		}
		out = append(out, qi)
	}
	return out, nil
}
