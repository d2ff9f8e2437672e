package main

// workflows start's placement flags: the queue a run waits on, its place
// there and when it may start. They are checked before the database is
// opened, so a typo costs no connection and queues nothing.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/errs"
)

// placement is what --queue, --partition, --priority, --at and --after
// asked for.
type placement struct {
	queue, partition string
	priority         int
	at               time.Time
	after            time.Duration
}

// placementFlags declares the flags on fs; the returned func reads and
// checks them once fs is parsed.
func placementFlags(fs *flag.FlagSet) func() (placement, error) {
	queue := fs.String("queue", "", "start: put the run on this queue (voltro queues list), to wait there for a slot; list: only runs started on it")
	partition := fs.String("partition", "", "start: the run's partition key on its queue (a tenant, a customer); needs --queue")
	priority := fs.Int("priority", 0, "start: the run's priority on its queue, lower first; needs --queue")
	at := fs.String("at", "", "start: start no earlier than this RFC 3339 time (2026-12-05T17:00:00Z)")
	after := fs.String("after", "", "start: start no earlier than this long from now (10m, 1h30m)")
	return func() (placement, error) {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		return checkPlacement(placement{queue: *queue, partition: *partition, priority: *priority}, *at, *after, set["priority"])
	}
}

// checkPlacement parses at and after into p and refuses what the library
// would refuse after the database is opened, or would take silently: a
// priority given (prioritySet, even 0) or a partition without a queue
// means nothing, and a deferral both by time and by duration is ambiguous.
func checkPlacement(p placement, at, after string, prioritySet bool) (placement, error) {
	if at != "" {
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return p, badArg("--at %q is not an RFC 3339 time: use e.g. 2026-12-05T17:00:00Z or 2026-12-05T18:00:00+01:00", at)
		}
		p.at = t
	}
	if after != "" {
		d, err := time.ParseDuration(after)
		if err != nil {
			return p, badArg("--after %q is not a duration: use e.g. 90s, 10m or 1h30m", after)
		}
		if d < 0 {
			return p, badArg("--after %s is negative: give how long from now the run may start", after)
		}
		p.after = d
	}
	switch {
	case at != "" && after != "":
		return p, badArg("--at and --after both set when the run may start: give one")
	case p.queue == "" && p.partition != "":
		return p, badArg("--partition %q needs --queue: a partition key is a place on a queue", p.partition)
	case p.queue == "" && prioritySet:
		return p, badArg("--priority %d needs --queue: a priority orders a queue", p.priority)
	}
	return p, nil
}

// options are the start options p asks for.
func (p placement) options() []voltro.StartOption {
	var opts []voltro.StartOption
	if p.queue != "" {
		// OnQueue reads only the name: the limits are those stored for
		// the fleet by the instances that register the queue.
		opts = append(opts, voltro.OnQueue(voltro.NewQueue(p.queue, voltro.QueueOptions{})))
		if p.partition != "" {
			opts = append(opts, voltro.WithPartitionKey(p.partition))
		}
		if p.priority != 0 {
			opts = append(opts, voltro.WithPriority(p.priority))
		}
	}
	switch {
	case !p.at.IsZero():
		opts = append(opts, voltro.StartAt(p.at))
	case p.after > 0:
		opts = append(opts, voltro.StartAfter(p.after))
	}
	return opts
}

// checkQueueStored refuses a queue no instance has registered: nothing
// would ever dequeue a run on it (a typo would wait for ever), as a start
// of a workflow no runner hosts would. --force skips it.
func checkQueueStored(ctx context.Context, w *voltro.Client, name string) error {
	qs, err := w.Queues(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(qs))
	for _, q := range qs {
		if q.Name == name {
			return nil
		}
		names = append(names, term(q.Name))
	}
	known := "no queue is stored"
	if len(names) > 0 {
		known = "stored queues: " + strings.Join(names, ", ")
	}
	return errs.New(errs.CodeUnregistered, "no instance registered queue %q, so nothing would dequeue the run (%s); check the name, or pass --force to queue it for a deploy on its way", name, known)
}

// printPlace prints the run's place on its queue and its deferred start,
// for workflows get: why a queued run has not started, and when a run on a
// queue got its slot.
func printPlace(w io.Writer, v execView) {
	if v.Queue != "" {
		fmt.Fprintf(w, "  queue:      %s", term(v.Queue))
		if v.Partition != "" {
			fmt.Fprintf(w, "  partition %s", term(v.Partition))
		}
		fmt.Fprintf(w, "  priority %d\n", v.Priority)
	}
	if v.StartAt != nil {
		fmt.Fprintf(w, "  start at:   %s\n", v.StartAt.Format(time.RFC3339))
	}
	if v.DequeuedAt != nil {
		fmt.Fprintf(w, "  dequeued:   %s\n", v.DequeuedAt.Format(time.RFC3339))
	}
}
