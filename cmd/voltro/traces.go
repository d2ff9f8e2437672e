package main

// voltro traces: one workflow execution's timeline across instances (runs,
// step attempts with their replica and runner, events) from DB_URL's
// introspection tables. A thin wrapper over internal/observe/cli.

import (
	"context"
	"io"

	"github.com/voltro/voltro/internal/observe/cli"
)

const tracesSynopsis = "traces EXECUTION_ID [--format text|json]"

func runTraces(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flags("traces", tracesSynopsis, stderr)
	format := fs.String("format", "text", "text or json")
	// the execution id may come before the flags
	var pos []string
	for rest := args; len(rest) > 0; {
		if err := parse(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	d, _, err := openStore(ctx, env, "")
	if err != nil {
		return err
	}
	defer d.Close()
	return cli.Traces(ctx, d, d, pos[0], *format, stdout)
}
