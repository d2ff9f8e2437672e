// `voltro watch TABLE [--where COL=VALUE]... [--format json]`: print the
// changes of a table as they commit, through the dialect's change feed
// (internal/cdc.Watch), against DB_URL.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/cdc/delta"
)

// watchUsage is the help text of the watch command.
const watchUsage = `usage: voltro watch TABLE [--where COL=VALUE]... [--format text|json]

Prints every change of TABLE as it is committed, from any writer (on
PostgreSQL and MariaDB with binlog CDC), until interrupted. Reads DB_URL,
DB_DIALECT, POD_NAME, CDC and VOLTRO_CDC_URL. With --format json each change
is one JSON object per line: {"op","table","key","row","old"}; op "resync"
means changes may have been missed.`

// runWatch parses args and runs the watch command until ctx ends. Logs go
// to stderr, changes to stdout.
func runWatch(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flags("watch", watchUsage, stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, watchUsage) }
	var where multiFlag
	fs.Var(&where, "where", "COL=VALUE filter (repeatable)")
	format := fs.String("format", "text", "text or json")
	// the table may come before, between or after the flags
	var table string
	for {
		if err := parse(fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		if table != "" {
			return badArg("want exactly one TABLE, got %q and %q", table, fs.Arg(0))
		}
		table, args = fs.Arg(0), fs.Args()[1:]
	}
	if table == "" {
		return badArg("want a TABLE")
	}
	if *format != "text" && *format != "json" {
		return badArg("--format %q: use text or json", *format)
	}
	filter, err := delta.ParseFilter(where)
	if err != nil {
		return err
	}
	cfg, err := cdc.WatchConfig(env)
	if err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	enc := json.NewEncoder(stdout)
	return cdc.Watch(ctx, cfg, table, filter, func(d delta.Delta) error {
		if *format == "json" {
			if err := enc.Encode(d); err != nil {
				return fmt.Errorf("watch: write: %w", err)
			}
			return nil
		}
		if _, err := fmt.Fprintln(stdout, formatDelta(d)); err != nil {
			return fmt.Errorf("watch: write: %w", err)
		}
		return nil
	})
}

// formatDelta renders one delta on one line for people.
func formatDelta(d delta.Delta) string {
	ts := time.Now().Format("15:04:05.000")
	if d.Op == delta.Resync {
		return fmt.Sprintf("%s resync %s (%s): re-read the table", ts, d.Table, d.Reason)
	}
	js := func(r delta.Row) string {
		b, _ := json.Marshal(r)
		return string(b)
	}
	switch d.Op {
	case delta.Insert:
		return fmt.Sprintf("%s insert %s key=%s row=%s", ts, d.Table, js(d.Key), js(d.Row))
	case delta.Update:
		if d.Old != nil {
			return fmt.Sprintf("%s update %s key=%s row=%s old=%s", ts, d.Table, js(d.Key), js(d.Row), js(d.Old))
		}
		return fmt.Sprintf("%s update %s key=%s row=%s", ts, d.Table, js(d.Key), js(d.Row))
	default:
		return fmt.Sprintf("%s %s %s key=%s old=%s", ts, d.Op, d.Table, js(d.Key), js(d.Old))
	}
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
