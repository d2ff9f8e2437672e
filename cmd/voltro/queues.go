package main

// voltro queues list|show NAME: the queues stored for the fleet, their
// limits and their runs now, through voltro.Client.Queues (the same
// numbers App.Queues gives an application).

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/errs"
)

const queuesUsage = `usage:
  voltro queues list [--format table|json]
  voltro queues show NAME [--format table|json]

The queues the instances registered (each with the limits its last
registration stored) and their runs now: QUEUED wait for a slot, DUE of
them may start now (the others wait for their --at / --after), ACTIVE hold
a slot (running or suspended), OLDEST is how long the oldest due run has
waited. A limit of - is none; RATE is dequeues per period. show adds the
runs dequeued in the last rate period (or minute) and the busiest
partitions. Start a run on a queue with voltro workflows start NAME
--queue Q. Reads DB_URL.`

func runQueues(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, queuesUsage)
		if len(args) == 0 {
			return badArg("missing subcommand: use list or show")
		}
		return errHelp
	}
	fs := flags("queues "+args[0], queuesUsage, stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, queuesUsage) }
	format := fs.String("format", "table", "table or json")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return badArg("--format %q: use table or json", *format)
	}
	switch {
	case args[0] == "list" && len(pos) == 0:
	case args[0] == "show" && len(pos) == 1:
	case args[0] == "list":
		return badArg("list: unexpected arguments %q", pos)
	case args[0] == "show" && len(pos) == 0:
		return badArg("show: missing NAME")
	case args[0] == "show":
		return badArg("show: unexpected arguments %q", pos[1:])
	default:
		return badArg("unknown subcommand %q: use list or show", args[0])
	}
	w, err := publicClient(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	qs, err := w.Queues(ctx)
	if err != nil {
		return err
	}
	if args[0] == "list" {
		return printQueues(stdout, qs, *format == "json")
	}
	for _, q := range qs {
		if q.Name == pos[0] {
			return printQueue(stdout, q, *format == "json")
		}
	}
	known := "no queue is stored"
	if len(qs) > 0 {
		names := make([]string, len(qs))
		for i, q := range qs {
			names[i] = term(q.Name)
		}
		known = "stored: " + strings.Join(names, ", ")
	}
	return errs.New(errs.CodeNotFound, "queue %q: no instance registered it (%s)", pos[0], known)
}

// queueView is a queue as JSON: the CLI's own names, durations in seconds
// as in the other commands' JSON. A zero limit is none.
type queueView struct {
	Name                 string                  `json:"name"`
	Concurrency          int                     `json:"concurrency"`
	WorkerConcurrency    int                     `json:"workerConcurrency"`
	PartitionConcurrency int                     `json:"partitionConcurrency"`
	RateLimit            int                     `json:"rateLimit"`
	RatePeriodSeconds    float64                 `json:"ratePeriodSeconds"`
	Queued               int                     `json:"queued"`
	Due                  int                     `json:"due"`
	Active               int                     `json:"active"`
	OldestDueSeconds     float64                 `json:"oldestDueSeconds"`
	RecentDequeues       int                     `json:"recentDequeues"`
	Partitions           []voltro.QueuePartition `json:"partitions"`
}

func queueViewOf(q voltro.QueueInfo) queueView {
	o := q.Options
	v := queueView{Name: q.Name, Concurrency: o.Concurrency, WorkerConcurrency: o.WorkerConcurrency, PartitionConcurrency: o.PartitionConcurrency,
		RateLimit: o.RateLimit.Limit, RatePeriodSeconds: o.RateLimit.Period.Seconds(), Queued: q.Queued, Due: q.Due, Active: q.Active,
		OldestDueSeconds: q.OldestDue.Seconds(), RecentDequeues: q.RecentDequeues, Partitions: q.Partitions}
	if v.Partitions == nil {
		v.Partitions = []voltro.QueuePartition{}
	}
	return v
}

// printQueues prints the queues as a table or JSON.
func printQueues(w io.Writer, qs []voltro.QueueInfo, asJSON bool) error {
	if asJSON {
		out := make([]queueView, len(qs))
		for i, q := range qs {
			out[i] = queueViewOf(q)
		}
		return printJSON(w, out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCONCURRENCY\tPER-WORKER\tPER-PARTITION\tRATE\tQUEUED\tDUE\tACTIVE\tOLDEST")
	for _, q := range qs {
		o := q.Options
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", term(q.Name), limitText(o.Concurrency), limitText(o.WorkerConcurrency),
			limitText(o.PartitionConcurrency), rateText(o.RateLimit), q.Queued, q.Due, q.Active, oldestText(q))
	}
	return tw.Flush()
}

// printQueue prints one queue's limits, counts and busiest partitions.
func printQueue(w io.Writer, q voltro.QueueInfo, asJSON bool) error {
	if asJSON {
		return printJSON(w, queueViewOf(q))
	}
	o := q.Options
	window := "minute"
	if o.RateLimit.Limit > 0 {
		window = shortDuration(o.RateLimit.Period)
	}
	none := func(s string) string {
		if s == "-" {
			return "no limit"
		}
		return s
	}
	fmt.Fprintf(w, "QUEUE %s\n", term(q.Name))
	fmt.Fprintf(w, "  concurrency:    %s fleet-wide, %s per worker, %s per partition\n",
		none(limitText(o.Concurrency)), none(limitText(o.WorkerConcurrency)), none(limitText(o.PartitionConcurrency)))
	fmt.Fprintf(w, "  rate:           %s\n", none(rateText(o.RateLimit)))
	switch {
	case q.Queued == 0:
		fmt.Fprintf(w, "  queued:         0\n")
	case q.Due == 0:
		fmt.Fprintf(w, "  queued:         %d (none due: they wait for their start time)\n", q.Queued)
	default:
		fmt.Fprintf(w, "  queued:         %d (%d due, the oldest waiting %s)\n", q.Queued, q.Due, oldestText(q))
	}
	fmt.Fprintf(w, "  active:         %d\n", q.Active)
	fmt.Fprintf(w, "  dequeued:       %d in the last %s\n", q.RecentDequeues, window)
	if len(q.Partitions) == 0 {
		return nil
	}
	fmt.Fprintln(w, "  busiest partitions:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "    PARTITION\tQUEUED\tACTIVE")
	for _, p := range q.Partitions {
		key := term(p.Key)
		if p.Key == "" {
			key = "(none)"
		}
		fmt.Fprintf(tw, "    %s\t%d\t%d\n", key, p.Queued, p.Active)
	}
	return tw.Flush()
}

// limitText renders a concurrency limit; 0 is none.
func limitText(n int) string {
	if n <= 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// rateText renders a rate limit as LIMIT/PERIOD (10/1s, 100/1m).
func rateText(r voltro.Rate) string {
	if r.Limit <= 0 || r.Period <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%s", r.Limit, shortDuration(r.Period))
}

// oldestText renders how long q's oldest due run has waited, "-" when none is due.
func oldestText(q voltro.QueueInfo) string {
	if q.Due == 0 {
		return "-"
	}
	if q.OldestDue < time.Second {
		return q.OldestDue.Round(time.Millisecond).String()
	}
	return shortDuration(q.OldestDue.Round(time.Second))
}

// shortDuration is d without its zero tail: 1m, 1h30m, not 1m0s, 1h30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
