package cli

// `voltro traces EXECUTION_ID`: one workflow execution's timeline across
// instances, from the durable run, its start context and journal, and the
// introspection tables (events and every step attempt, each with the
// replica and runner that did it).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/store"
)

// Timeline is one execution as `voltro traces` shows it.
type Timeline struct {
	ExecutionID string `json:"executionId"`
	Workflow    string `json:"workflow"`
	Status      string `json:"status"`
	WaitingOn   string `json:"waitingOn,omitempty"`
	TraceID     string `json:"traceId"`
	Traceparent string `json:"traceparent,omitempty"`
	// TraceDerived: the start recorded no trace, so the replays' spans use
	// the trace id derived from the execution id.
	TraceDerived bool       `json:"traceDerived,omitempty"`
	Source       string     `json:"source,omitempty"`
	Subject      string     `json:"subject,omitempty"`
	ParentID     string     `json:"parentId,omitempty"`
	Children     []string   `json:"children,omitempty"`
	CreatedAt    time.Time  `json:"createdAt"`
	FinishedAt   *time.Time `json:"finishedAt,omitempty"`
	DurationS    float64    `json:"durationSeconds"`
	Replicas     []string   `json:"replicas"`
	Runners      []string   `json:"runners"`
	Items        []Item     `json:"items"`
	// Introspection is false when the store keeps no introspection tables
	// (then only the journal is shown).
	Introspection bool `json:"introspection"`
}

// Item is one line of the timeline: an event, a step attempt, or a journaled
// operation (sleep, signal, child; steps without attempt records).
type Item struct {
	At        time.Time  `json:"at"`
	End       *time.Time `json:"end,omitempty"`
	OffsetS   float64    `json:"offsetSeconds"`
	DurationS *float64   `json:"durationSeconds,omitempty"`
	Kind      string     `json:"kind"` // event | step | journal
	What      string     `json:"what"` // event kind, step status, journal kind
	Name      string     `json:"name,omitempty"`
	Seq       *int       `json:"seq,omitempty"`
	Attempt   int        `json:"attempt,omitempty"`
	Detail    string     `json:"detail,omitempty"`
	Replica   string     `json:"replicaId,omitempty"`
	Runner    string     `json:"runner,omitempty"`
	TraceID   string     `json:"traceId,omitempty"`
}

// BuildTimeline reads everything known about execution id. in may be nil
// (a store without introspection tables).
func BuildTimeline(ctx context.Context, ws store.Workflows, in store.Introspection, id string) (Timeline, error) {
	x, err := ws.GetExecution(ctx, id)
	if err != nil {
		return Timeline{}, fmt.Errorf("reading execution %s: %w", id, err)
	}
	tl := Timeline{ExecutionID: x.ID, Workflow: x.Name, Status: string(x.Status), WaitingOn: x.WaitingOn,
		ParentID: x.ParentID, CreatedAt: x.CreatedAt, Introspection: in != nil, Items: []Item{}}
	if !x.FinishedAt.IsZero() {
		f := x.FinishedAt
		tl.FinishedAt = &f
		tl.DurationS = f.Sub(x.CreatedAt).Seconds()
	}
	sc, err := ws.GetStartContext(ctx, id)
	switch {
	case err == nil:
		tl.Traceparent, tl.TraceID = sc.Trace, observe.TraceID(sc.Trace)
		tl.Source, tl.Subject = sc.Source, sc.Subject
	case !errors.Is(err, errs.ErrNotFound):
		return Timeline{}, fmt.Errorf("reading the start context of %s: %w", id, err)
	}
	if tl.TraceID == "" {
		tl.TraceID, tl.TraceDerived = observe.ExecutionSpanContext(id).TraceID().String(), true
	}
	children, err := ws.ListExecutions(ctx, store.ExecutionFilter{ParentID: id, Limit: 1000})
	if err != nil {
		return Timeline{}, fmt.Errorf("listing the children of %s: %w", id, err)
	}
	for _, c := range children {
		tl.Children = append(tl.Children, c.ID)
	}
	slices.Sort(tl.Children)
	journal, err := ws.Journal(ctx, id)
	if err != nil {
		return Timeline{}, fmt.Errorf("reading the journal of %s: %w", id, err)
	}
	attempted := map[int]bool{}
	replicaOf := map[string]string{} // runner address -> replica id, from what recorded both
	if in != nil {
		if err := tl.addIntrospection(ctx, in, id, attempted, replicaOf); err != nil {
			return Timeline{}, err
		}
	}
	tl.addJournal(journal, attempted, replicaOf)
	tl.finish(x.CreatedAt)
	return tl, nil
}

// addIntrospection adds the step attempts and events of run id, noting
// which steps were attempted and which replica each runner address is.
func (tl *Timeline) addIntrospection(ctx context.Context, in store.Introspection, id string, attempted map[int]bool, replicaOf map[string]string) error {
	steps, err := in.RunSteps(ctx, id)
	if err != nil {
		return fmt.Errorf("reading the step attempts of %s: %w", id, err)
	}
	for _, s := range steps {
		attempted[s.Seq] = true
		if s.Runner != "" && s.ReplicaID != "" {
			replicaOf[s.Runner] = s.ReplicaID
		}
		it := Item{At: s.StartedAt, Kind: "step", What: s.Status, Name: s.Name, Seq: &s.Seq, Attempt: s.Attempt,
			Detail: s.Error, Replica: s.ReplicaID, Runner: s.Runner, TraceID: observe.TraceID(s.Trace)}
		it.setEnd(s.FinishedAt)
		tl.Items = append(tl.Items, it)
	}
	events, err := in.RunEvents(ctx, id)
	if err != nil {
		return fmt.Errorf("reading the events of %s: %w", id, err)
	}
	for _, e := range events {
		if e.Runner != "" && e.ReplicaID != "" {
			replicaOf[e.Runner] = e.ReplicaID
		}
		tl.Items = append(tl.Items, Item{At: e.At, Kind: "event", What: e.Kind, Detail: e.Detail, Replica: e.ReplicaID, Runner: e.Runner})
	}
	return nil
}

// addJournal adds the journal entries the introspection rows do not cover:
// first-try steps and waits.
func (tl *Timeline) addJournal(journal []store.JournalEntry, attempted map[int]bool, replicaOf map[string]string) {
	for _, j := range journal {
		if j.Kind == store.JournalStep && attempted[j.Seq] {
			continue
		}
		// first-try steps and waits are only in the journal
		it := Item{At: j.StartedAt, Kind: "journal", What: string(j.Kind), Name: j.Name, Seq: &j.Seq, Attempt: j.Attempts, Runner: j.Runner, Replica: replicaOf[j.Runner]}
		if len(j.Error) > 0 {
			it.Detail = errs.Decode(j.Error).Message
		}
		if it.At.IsZero() {
			it.At = j.FinishedAt
		}
		it.setEnd(j.FinishedAt)
		tl.Items = append(tl.Items, it)
	}
}

// finish orders the items, sets their offsets from the run's creation and
// lists the replicas and runners they name.
func (tl *Timeline) finish(created time.Time) {
	slices.SortStableFunc(tl.Items, func(a, b Item) int { return a.At.Compare(b.At) })
	replicas, runners := map[string]bool{}, map[string]bool{}
	for i := range tl.Items {
		it := &tl.Items[i]
		if !created.IsZero() && !it.At.IsZero() {
			it.OffsetS = it.At.Sub(created).Seconds()
		}
		if it.Replica != "" {
			replicas[it.Replica] = true
		}
		if it.Runner != "" {
			runners[it.Runner] = true
		}
	}
	tl.Replicas, tl.Runners = sortedKeys(replicas), sortedKeys(runners)
}

func (it *Item) setEnd(end time.Time) {
	if end.IsZero() || it.At.IsZero() {
		return
	}
	it.End = &end
	d := end.Sub(it.At).Seconds()
	it.DurationS = &d
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Traces prints execution id's timeline as a table (format text) or JSON.
func Traces(ctx context.Context, ws store.Workflows, in store.Introspection, id, format string, stdout io.Writer) error {
	if format != "" && format != "text" && format != "table" && format != "json" {
		return errs.New(errs.CodeInvalidArgument, "--format %q: use text or json", format)
	}
	tl, err := BuildTimeline(ctx, ws, in, id)
	if err != nil {
		return err
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(tl)
	}
	WriteTimeline(stdout, tl)
	return nil
}

// WriteTimeline renders tl for a terminal.
func WriteTimeline(w io.Writer, tl Timeline) {
	fmt.Fprintf(w, "%s  %s  %s\n", tl.ExecutionID, tl.Workflow, strings.ToUpper(tl.Status))
	if tl.TraceDerived {
		fmt.Fprintf(w, "  trace:     %s (derived from the execution id: the start recorded none)\n", tl.TraceID)
	} else {
		fmt.Fprintf(w, "  trace:     %s\n", tl.TraceID)
	}
	started := tl.CreatedAt.UTC().Format(time.RFC3339Nano)
	if tl.Source != "" {
		started += " by " + tl.Source
	}
	if tl.Subject != "" {
		started += " (" + tl.Subject + ")"
	}
	fmt.Fprintf(w, "  created:   %s\n", started)
	switch {
	case tl.FinishedAt != nil:
		fmt.Fprintf(w, "  finished:  %s after %s\n", tl.FinishedAt.UTC().Format(time.RFC3339Nano), seconds(tl.DurationS))
	case tl.WaitingOn != "":
		fmt.Fprintf(w, "  waiting:   %s\n", tl.WaitingOn)
	}
	if tl.ParentID != "" {
		fmt.Fprintf(w, "  parent:    %s\n", tl.ParentID)
	}
	if len(tl.Children) > 0 {
		fmt.Fprintf(w, "  children:  %s\n", strings.Join(tl.Children, ", "))
	}
	fmt.Fprintf(w, "  replicas:  %s\n", orNone(strings.Join(tl.Replicas, ", ")))
	if !tl.Introspection {
		fmt.Fprintln(w, "  (this store keeps no introspection tables: journal only)")
	}
	if len(tl.Items) == 0 {
		fmt.Fprintln(w, "\n  nothing recorded yet")
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  OFFSET\tTOOK\tREPLICA\tRUNNER\tWHAT")
	for _, it := range tl.Items {
		took := ""
		if it.DurationS != nil {
			took = seconds(*it.DurationS)
		}
		fmt.Fprintf(tw, "  +%s\t%s\t%s\t%s\t%s\n", seconds(it.OffsetS), took, orDash(it.Replica), orDash(it.Runner), describe(it))
	}
	tw.Flush()
}

func describe(it Item) string {
	var s string
	switch it.Kind {
	case "step":
		s = fmt.Sprintf("step #%d %s attempt %d %s", *it.Seq, it.Name, it.Attempt, it.What)
	case "journal":
		s = fmt.Sprintf("%s #%d %s", it.What, *it.Seq, it.Name)
		if it.What == string(store.JournalStep) {
			outcome := "completed"
			if it.Detail != "" {
				outcome = "failed"
			}
			s += fmt.Sprintf(" %s after %d attempt(s)", outcome, it.Attempt)
		}
	default:
		s = it.What
	}
	if it.Detail != "" {
		s += ": " + firstLine(it.Detail)
	}
	return s
}

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}
