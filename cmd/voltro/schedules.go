// `voltro schedules list|runs NAME [--format json]`: the schedules
// recorded in DB_URL's database and the runs of one of them, as a table or
// JSON.

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/schedule"
)

const schedulesUsage = `usage:
  voltro schedules list [--format table|json]
  voltro schedules runs NAME [--limit N] [--format table|json]

Reads DB_URL (and DB_DIALECT). Times are UTC.`

// runSchedules runs `voltro schedules` with args (after the word
// "schedules").
func runSchedules(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, schedulesUsage)
		if len(args) == 0 {
			return badArg("missing subcommand: use list or runs")
		}
		return errHelp
	}
	fs := flags("schedules "+args[0], schedulesUsage, stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, schedulesUsage) }
	format := fs.String("format", "table", "table or json")
	limit := fs.Int("limit", 50, "runs to show, newest first")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return badArg("--format %q: use table or json", *format)
	}
	if *limit <= 0 {
		return badArg("--limit %d is not positive", *limit)
	}
	switch {
	case args[0] == "list" && len(pos) == 0:
	case args[0] == "runs" && len(pos) == 1:
	case args[0] == "list" || args[0] == "runs":
		return badArg("%s: wrong arguments %q", args[0], pos)
	default:
		return badArg("unknown subcommand %q: use list or runs", args[0])
	}
	st, err := schedule.OpenURL(ctx, config.DatabaseURL(env), config.Dialect(env))
	if err != nil {
		return err
	}
	defer st.Close()
	if args[0] == "list" {
		return listSchedules(ctx, st, *format == "json", stdout)
	}
	return listRuns(ctx, st, pos[0], *limit, *format == "json", stdout)
}

// parseInterspersed parses flags wherever they are among the positional
// arguments ("runs NAME --format json").
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func listSchedules(ctx context.Context, st schedule.Store, asJSON bool, w io.Writer) error {
	sums, err := st.ScheduleSummaries(ctx)
	if err != nil {
		return err
	}
	views := schedule.Views(sums, time.Now())
	if asJSON {
		return writeJSON(w, views)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSPEC\tZONE\tCOORDINATION\tOVERLAP\tNEXT\tLAST TICK\tLAST OUTCOME\tLAST STATUS\tCOUNTS")
	for _, v := range views {
		last := []string{"-", "-", "-"}
		if r := v.LastRun; r != nil {
			last = []string{stamp(r.ScheduledAt), string(r.Outcome), string(r.Status)}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, dash(v.Spec), dash(v.TimeZone), dash(string(v.Coordination)),
			dash(string(v.Overlap)), stamp(v.NextFireAt), last[0], last[1], last[2], countsText(v.Counts))
	}
	return tw.Flush()
}

func listRuns(ctx context.Context, st schedule.Store, name string, limit int, asJSON bool, w io.Writer) error {
	runs, err := st.ScheduleRuns(ctx, name, limit)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		sums, err := st.ScheduleSummaries(ctx)
		if err != nil {
			return err
		}
		known := false
		for _, s := range sums {
			known = known || s.Name == name
		}
		if !known {
			return errs.New(errs.CodeNotFound, "schedule %q: no replica defined it and it has no runs", name)
		}
	}
	if asJSON {
		if runs == nil {
			runs = []schedule.Run{}
		}
		return writeJSON(w, runs)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULED AT\tREPLICA\tOUTCOME\tSTATUS\tSTARTED\tDURATION\tERROR")
	for _, r := range runs {
		dur := "-"
		if !r.Started.IsZero() && !r.Finished.IsZero() {
			dur = r.Finished.Sub(r.Started).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", stamp(r.ScheduledAt), r.ReplicaID, r.Outcome, r.Status,
			stampMilli(r.Started), dur, dash(errorHead(r.Error)))
	}
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// countsText renders outcome counts in the fixed outcome order.
func countsText(c map[schedule.Outcome]int64) string {
	var parts []string
	for _, o := range schedule.Outcomes {
		if n := c[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", o, n))
		}
	}
	return dash(strings.Join(parts, " "))
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.DateTime)
}

func stampMilli(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// errorHead is an error's first line, "…" marking the rest.
func errorHead(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
