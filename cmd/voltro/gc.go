package main

// voltro gc: one retention pass over DB_URL's database, now, from this
// machine: what the background sweeper does on the instance holding the
// retention shard, with the retention of this environment.

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/retention"
	"github.com/voltro/voltro/internal/store"
)

const gcSynopsis = "gc [--dry-run] [--retention D] [--dead-letter-retention D] [--format table|json] [--db URL]"

func runGC(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flags("gc", gcSynopsis, stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: voltro %s\n", gcSynopsis)
		fmt.Fprintln(stderr, "Deletes what the retention no longer keeps (docs/retention.md): finished workflow runs with")
		fmt.Fprintln(stderr, "every row that belongs to them and processed messages with their replies older than")
		fmt.Fprintln(stderr, "VOLTRO_RETENTION (default 7d), dead letters older than VOLTRO_DEAD_LETTER_RETENTION")
		fmt.Fprintln(stderr, "(default 30d), and the rows of runners silent for an hour. The retention is this")
		fmt.Fprintln(stderr, "environment's: set the variables as the app has them, or pass the flags. It deletes in")
		fmt.Fprintln(stderr, "small batches with a pause between them, as the app's own sweeper does; --dry-run only")
		fmt.Fprintln(stderr, "counts. It prints the rows per kind and table.")
		fs.PrintDefaults()
	}
	dry := fs.Bool("dry-run", false, "count what would go, delete nothing")
	runs := fs.String("retention", "", "keep finished runs and processed messages this long (e.g. 7d, 36h; 0 keeps them; default VOLTRO_RETENTION)")
	dead := fs.String("dead-letter-retention", "", "keep dead letters this long (default VOLTRO_DEAD_LETTER_RETENTION)")
	format := fs.String("format", "table", "table or json")
	db := fs.String("db", "", "database URL (default DB_URL)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	if *format != "table" && *format != "json" {
		return badArg("--format %q: use table or json", *format)
	}
	// The flags override the variables, through the same parser.
	genv := func(k string) string {
		switch {
		case k == "VOLTRO_RETENTION" && *runs != "":
			return *runs
		case k == "VOLTRO_DEAD_LETTER_RETENTION" && *dead != "":
			return *dead
		}
		return env(k)
	}
	d, cfg, err := openStore(ctx, genv, *db)
	if err != nil {
		return err
	}
	defer d.Close()
	rs, ok := d.(retention.Store)
	if !ok {
		return errs.New(errs.CodeUnavailable, "the %s store cannot delete old rows", d.Dialect())
	}
	p := engine.RetentionPolicy(cfg)
	res, err := retention.Pass(ctx, rs, p, retention.PassOptions{DryRun: *dry, Pause: retention.DefaultPause}, nil)
	if err != nil {
		return err
	}
	if *format == "json" {
		return printJSON(stdout, gcJSON{Retention: gcPolicy{Runs: config.RetentionText(p.Runs), DeadLetters: config.RetentionText(p.DeadLetters),
			RunsSeconds: p.Runs.Seconds(), DeadLettersSeconds: p.DeadLetters.Seconds(), RunnersSeconds: p.Runners.Seconds()}, Result: res})
	}
	fmt.Fprintf(stdout, "retention: finished runs and processed messages %s, dead letters %s, silent runners' rows %s (store clock %s)\n",
		config.RetentionText(p.Runs), config.RetentionText(p.DeadLetters), config.RetentionText(p.Runners), res.Now.UTC().Format(time.RFC3339))
	if len(res.Kinds) == 0 {
		fmt.Fprintln(stdout, "nothing to do: every kind is kept for ever")
		return nil
	}
	verb := "deleted"
	if *dry {
		verb = "would delete"
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tOLDER THAN\tTABLE\tROWS")
	var total int64
	for _, k := range res.Kinds {
		printed := false
		for _, t := range store.SweepTables {
			if n := k.Rows[t]; n > 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", gcKind(k.Kind), k.Before.UTC().Format(time.RFC3339), t, n)
				total += n
				printed = true
			}
		}
		if !printed {
			fmt.Fprintf(tw, "%s\t%s\t-\t0\n", gcKind(k.Kind), k.Before.UTC().Format(time.RFC3339))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %d row(s)\n", verb, total)
	if *dry && res.Total(store.TableExecutions) > 0 {
		fmt.Fprintln(stdout, "(a dry run counts the start message of a finished run under runs and again under processed messages: the real pass deletes it once, with its run)")
	}
	return nil
}

// gcKind names a sweep kind for people.
func gcKind(k store.SweepKind) string {
	switch k {
	case store.SweepRuns:
		return "finished runs"
	case store.SweepProcessed:
		return "processed messages"
	case store.SweepDead:
		return "dead letters"
	case store.SweepRunners:
		return "silent runners"
	}
	return string(k)
}

type gcPolicy struct {
	Runs               string  `json:"runs"`
	DeadLetters        string  `json:"deadLetters"`
	RunsSeconds        float64 `json:"runsSeconds"`
	DeadLettersSeconds float64 `json:"deadLettersSeconds"`
	RunnersSeconds     float64 `json:"runnersSeconds"`
}

type gcJSON struct {
	Retention gcPolicy `json:"retention"`
	retention.Result
}
