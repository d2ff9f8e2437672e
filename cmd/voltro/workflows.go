package main

// voltro workflows: start, inspect, list, cancel, signal, resume and retry
// runs through the database (DB_URL), without the workflow's code, as a
// voltro.Client.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/workflow"
)

const workflowsUsage = `usage: voltro workflows start NAME [--input JSON] [--key K] [--force] [--queue Q [--partition K] [--priority N]] [--at TIME | --after DURATION]
       voltro workflows get ID [--format json]
       voltro workflows list [--status S] [--name N] [--queue Q] [--limit N] [--format json]
       voltro workflows cancel ID
       voltro workflows signal ID NAME [--payload JSON]
       voltro workflows resume ID
       voltro workflows retry ID

start refuses a NAME no live runner hosts (on a SQL store with SQL runner
storage), naming the workflows live runners do host, and --input its
workflow could not decode (a wrong JSON type, a number that does not fit),
by the input schema its runners publish; unknown fields pass, as in
encoding/json. --force skips both checks and queues it anyway.

start --queue Q puts the run on queue Q: it stays queued until the limits
the instances registering Q stored give it a slot (voltro queues show Q);
start refuses a Q no instance registered (nothing would dequeue the run)
unless --force. --partition and --priority are its place on Q (lower
priority first). --at (RFC 3339) or --after (10m) defers its start, on a
queue or not.

cancel of a run whose workflow no live runner hosts finishes it as
cancelled at once and dead-letters its pending messages; otherwise the
runner hosting it stops it at its next replay.

resume puts a failed or cancelled run back to work with its whole journal
(it goes on from where it stopped, with the code deployed now); retry cuts
its journal at the first failed operation, which runs again with all that
followed. Both refuse a run that is running, suspended or completed.`

// workflowClient opens the store as a client: it owns no shards and
// registers no runner; the owners pick started runs up from the database.
// The dashboard's actions use it (they take the engine).
func workflowClient(ctx context.Context, env func(string) string) (*workflow.Engine, func(), error) {
	if config.DatabaseURL(env) == "" {
		return nil, nil, errNoDB
	}
	cfg, err := config.FromEnv(env, "")
	if err != nil {
		return nil, nil, err
	}
	cfg.Warnings = nil
	return workflow.OpenClient(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

var errNoDB = errors.New("DB_URL is not set: point it at the cluster's database")

// publicClient opens the database as voltro.NewClient does for an
// application: the workflows commands are a client like any other.
func publicClient(ctx context.Context, env func(string) string) (*voltro.Client, error) {
	if config.DatabaseURL(env) == "" {
		return nil, errNoDB
	}
	return voltro.NewClient(ctx, voltro.WithEnv(env), voltro.WithLogger(slog.New(slog.DiscardHandler)))
}

func runWorkflows(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, workflowsUsage)
		return errUsage
	}
	sub, rest := args[0], args[1:]
	if sub == "--help" || sub == "-h" || sub == "help" {
		fmt.Fprintln(stdout, workflowsUsage)
		return errHelp
	}
	fs := flags("workflows "+sub, workflowsUsage, stderr)
	input := fs.String("input", "null", "start: the run's input as JSON")
	key := fs.String("key", "", "start: idempotency key (same name + key = same run)")
	payload := fs.String("payload", "null", "signal: the payload as JSON")
	format := fs.String("format", "table", "get, list: table or json")
	status := fs.String("status", "", "list: queued, running, suspended, completed, failed or cancelled")
	name := fs.String("name", "", "list: only this workflow")
	limit := fs.Int("limit", 50, "list: at most this many")
	force := fs.Bool("force", false, "start: queue the run even if no live runner hosts the workflow, its input does not fit the published schema or no instance registered its --queue")
	// --queue is also list's filter: declared with start's placement
	place := placementFlags(fs)
	// flags may follow the positional arguments
	var pos []string
	for len(rest) > 0 {
		if err := parse(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	need := map[string]int{"start": 1, "get": 1, "list": 0, "cancel": 1, "signal": 2, "resume": 1, "retry": 1}
	n, ok := need[sub]
	if !ok {
		fmt.Fprintf(stderr, "voltro workflows: unknown subcommand %q\n%s\n", sub, workflowsUsage)
		return errUsage
	}
	if len(pos) != n {
		fmt.Fprintf(stderr, "voltro workflows %s: %s\n%s\n", sub, wrongArgs(sub, pos, n), workflowSynopsis(sub))
		return errUsage
	}
	if *format != "table" && *format != "json" {
		return badArg("--format %q: use table or json", *format)
	}
	if err := checkRunStatus(*status); err != nil {
		return err
	}
	if err := checkJSON(sub, *input, *payload); err != nil {
		return err
	}
	// the other subcommands ignore start's flags (as they ignore --input);
	// list reads --queue
	p, err := place()
	if err != nil && sub == "start" {
		return err
	}
	w, err := publicClient(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	switch sub {
	case "start":
		return workflowStart(ctx, w, pos[0], *input, *key, *force, p, stdout, stderr)
	case "get":
		return workflowGet(ctx, w, pos[0], *format, stdout)
	case "list":
		return workflowList(ctx, w, voltro.ListFilter{Status: voltro.RunStatus(*status), Name: *name, Queue: p.queue, Limit: *limit}, *format, stdout)
	case "cancel":
		return workflowCancel(ctx, w, pos[0], stdout)
	case "signal":
		return workflowSignal(ctx, w, pos[0], pos[1], *payload, stdout)
	case "resume":
		if err := w.Resume(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s resumed with its journal; its owner runs it on\n", pos[0])
	case "retry":
		if err := w.Retry(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s retried from its last good step; its owner runs it again\n", pos[0])
	}
	return nil
}

// wrongArgs says why pos is not the n positional arguments subcommand sub
// takes: the unexpected ones named, or the missing ones by their usage names.
func wrongArgs(sub string, pos []string, n int) string {
	if len(pos) > n {
		return fmt.Sprintf("unexpected arguments %q", pos[n:])
	}
	names := strings.Fields(strings.TrimPrefix(workflowSynopsis(sub), "usage: voltro workflows "+sub))
	return "missing " + strings.Join(names[len(pos):n], " ")
}

// workflowSynopsis is the usage line of one subcommand, from workflowsUsage.
func workflowSynopsis(sub string) string {
	for _, l := range strings.Split(workflowsUsage, "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "usage: ")
		if strings.HasPrefix(l, "voltro workflows "+sub+" ") || l == "voltro workflows "+sub {
			return "usage: " + l
		}
	}
	return workflowsUsage
}

// runStatuses are the values of workflows list --status.
var runStatuses = []store.ExecStatus{store.ExecQueued, store.ExecRunning, store.ExecSuspended, store.ExecCompleted, store.ExecFailed, store.ExecCancelled}

// checkRunStatus refuses a --status that is no run status: listing it would
// print an empty table as if no run matched.
func checkRunStatus(s string) error {
	names := make([]string, len(runStatuses))
	for i, st := range runStatuses {
		if string(st) == s || s == "" {
			return nil
		}
		names[i] = string(st)
	}
	return badArg("--status %q is not a run status: use %s", s, strings.Join(names, ", "))
}

// checkJSON refuses a --input (start) or --payload (signal) that is not
// JSON, before the database is opened.
func checkJSON(sub, input, payload string) error {
	switch {
	case sub == "start" && !json.Valid([]byte(input)):
		return errs.New(errs.CodeInvalidArgument, "--input is not valid JSON: %s", input)
	case sub == "signal" && !json.Valid([]byte(payload)):
		return errs.New(errs.CodeInvalidArgument, "--payload is not valid JSON: %s", payload)
	}
	return nil
}

// workflowStart starts workflow name with input (valid JSON) where p
// places it and prints the run's id; unless force, it first checks that a
// live runner hosts the workflow, that the input fits its published schema
// and that an instance registered p's queue.
func workflowStart(ctx context.Context, w *voltro.Client, name, input, key string, force bool, p placement, stdout, stderr io.Writer) error {
	opts := append([]voltro.StartOption{voltro.WithSource(voltro.SourceCLI)}, p.options()...)
	if !force {
		opts = append(opts, voltro.RequireHost())
		if p.queue != "" {
			if err := checkQueueStored(ctx, w, p.queue); err != nil {
				return err
			}
		}
	}
	var existing *voltro.WorkflowStatus
	if key != "" {
		opts = append(opts, voltro.WithKey(key))
		st, err := w.Get(ctx, voltro.ExecutionID(name, key))
		switch {
		case err == nil:
			existing = &st
		case !errors.Is(err, voltro.ErrNotFound):
			return err
		}
	}
	id, err := w.StartWorkflow(ctx, name, json.RawMessage(input), opts...)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, id)
	if existing != nil {
		fmt.Fprintf(stderr, "(the key names an existing run, status %s)\n", existing.Status)
	}
	return nil
}

// workflowList prints the runs that match f, as a table or JSON.
func workflowList(ctx context.Context, w *voltro.Client, f voltro.ListFilter, format string, stdout io.Writer) error {
	xs, err := w.List(ctx, f)
	if err != nil {
		return err
	}
	if format == "json" {
		out := make([]execView, 0, len(xs))
		for _, x := range xs {
			out = append(out, viewOf(x))
		}
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tWAITING ON\tRUNNER\tCREATED")
	for _, x := range xs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", term(x.ID), term(x.Name), term(string(x.Status)), term(x.Waiting.String()), term(x.Runner), x.CreatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

// workflowCancel cancels run id, or says why there is nothing to cancel.
func workflowCancel(ctx context.Context, w *voltro.Client, id string, stdout io.Writer) error {
	out, err := w.CancelRun(ctx, id)
	switch {
	case err != nil:
		return err
	case out.Finished:
		fmt.Fprintf(stdout, "%s cancelled: no live runner hosts its workflow; %d pending message(s) dead-lettered (voltro messages list --state dead)\n", id, out.DeadLettered)
	case out.Requested:
		fmt.Fprintf(stdout, "cancel requested for %s; the runner hosting it stops it at its next replay\n", id)
	default:
		fmt.Fprintf(stdout, "%s is already %s; nothing to cancel\n", id, out.Status)
	}
	return nil
}

// workflowSignal sends signal name with payload (valid JSON) to run id.
func workflowSignal(ctx context.Context, w *voltro.Client, id, name, payload string, stdout io.Writer) error {
	stored, err := w.Signal(ctx, id, name, json.RawMessage(payload))
	if err != nil {
		return err
	}
	if stored {
		fmt.Fprintf(stdout, "signal %q delivered to %s\n", name, id)
	} else {
		fmt.Fprintf(stdout, "signal %q was already delivered to %s; the first one counts\n", name, id)
	}
	return nil
}

type stepView struct {
	Seq      int             `json:"seq"`
	Kind     string          `json:"kind"`
	Name     string          `json:"name"`
	Attempts int             `json:"attempts"`
	Runner   string          `json:"runner"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *voltro.Error   `json:"error,omitempty"`
	Finished time.Time       `json:"finishedAt"`
	Tries    []tryView       `json:"tries,omitempty"`
}

type tryView struct {
	Attempt int    `json:"attempt"`
	Status  string `json:"status"`
	Runner  string `json:"runner"`
	Replica string `json:"replicaId,omitempty"`
	Error   string `json:"error,omitempty"`
}

type execView struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	WaitingOn  string          `json:"waitingOn,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *voltro.Error   `json:"error,omitempty"`
	ParentID   string          `json:"parentId,omitempty"`
	Runner     string          `json:"runner,omitempty"`
	CreatedAt  time.Time       `json:"createdAt"`
	FinishedAt *time.Time      `json:"finishedAt,omitempty"`
	// the run's place on its queue (OnQueue, workflows start --queue)
	Queue      string     `json:"queue,omitempty"`
	Partition  string     `json:"partition,omitempty"`
	Priority   int        `json:"priority,omitempty"`
	StartAt    *time.Time `json:"startAt,omitempty"`
	DequeuedAt *time.Time `json:"dequeuedAt,omitempty"`
	Steps      []stepView `json:"steps,omitempty"`
}

func viewOf(x voltro.WorkflowStatus) execView {
	return execView{ID: x.ID, Name: x.Name, Status: string(x.Status), WaitingOn: x.Waiting.String(), Input: x.Input, Result: x.Output, Error: x.Error,
		ParentID: x.ParentID, Runner: x.Runner, CreatedAt: x.CreatedAt, FinishedAt: x.FinishedAt,
		Queue: x.Queue, Partition: x.Partition, Priority: x.Priority, StartAt: x.StartAt, DequeuedAt: x.DequeuedAt}
}

func workflowGet(ctx context.Context, w *voltro.Client, id, format string, stdout io.Writer) error {
	x, err := w.Get(ctx, id)
	if err != nil {
		return err
	}
	v := viewOf(x)
	journal, err := w.Journal(ctx, id)
	if err != nil {
		return err
	}
	for _, e := range journal {
		sv := stepView{Seq: e.Seq, Kind: string(e.Kind), Name: e.Name, Attempts: e.Attempts, Runner: e.Runner, Result: e.Result, Error: e.Error, Finished: e.FinishedAt}
		for _, t := range e.Tries {
			sv.Tries = append(sv.Tries, tryView{Attempt: t.Attempt, Status: string(t.Status), Runner: t.Runner, Replica: t.ReplicaID, Error: t.Error})
		}
		v.Steps = append(v.Steps, sv)
	}
	if format == "json" {
		return printJSON(stdout, v)
	}
	// Everything below comes from the database: escaped for the terminal.
	fmt.Fprintf(stdout, "%s  %s  %s\n", term(v.ID), term(v.Name), term(strings.ToUpper(v.Status)))
	if v.WaitingOn != "" {
		fmt.Fprintf(stdout, "  waiting on: %s\n", term(v.WaitingOn))
	}
	if v.ParentID != "" {
		fmt.Fprintf(stdout, "  parent:     %s\n", term(v.ParentID))
	}
	printPlace(stdout, v)
	fmt.Fprintf(stdout, "  input:      %s\n", term(string(v.Input)))
	switch {
	case v.Error != nil:
		fmt.Fprintf(stdout, "  error:      %s (%s)\n", term(v.Error.Message), term(string(v.Error.Code)))
	case x.Status == voltro.StatusCompleted:
		fmt.Fprintf(stdout, "  result:     %s\n", term(string(v.Result)))
	}
	if len(v.Steps) > 0 {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tKIND\tNAME\tATTEMPTS\tRUNNER\tOUTCOME")
		for _, s := range v.Steps {
			outcome := string(s.Result)
			if s.Error != nil {
				outcome = "error: " + s.Error.Message
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%s\t%s\n", s.Seq, term(s.Kind), term(s.Name), s.Attempts, term(s.Runner), term(firstLine(outcome, 60)))
		}
		tw.Flush()
	}
	return nil
}
