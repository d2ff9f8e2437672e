package main

// voltro logs: the recent log records of every running instance of DB_URL's
// database (or of every local instance without DB_URL), merged by time. A
// thin wrapper over internal/observe/cli.

import (
	"context"
	"io"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/observe/cli"
)

const logsSynopsis = "logs [--tail N] [--boot] [--process NAME] [--level debug|info|warn|error] [--format text|json]"

func runLogs(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flags("logs", logsSynopsis, stderr)
	tail := fs.Int("tail", 100, "print the last N records of all instances together (0: all they keep)")
	boot := fs.Bool("boot", false, "first print each instance's boot records (kept apart even after the ring turned over); --tail N then counts the records after them")
	process := fs.String("process", "", "only instances of this process name (or replica id)")
	level := fs.String("level", "debug", "lowest level printed")
	format := fs.String("format", "text", "text, or json (one record per line)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	cfg, err := config.FromEnv(env, "")
	if err != nil {
		return err
	}
	dir, err := config.RegistryDir(env)
	if err != nil {
		return err
	}
	o := cli.LogsOptions{
		RegistryDir: dir, Process: *process, Tail: *tail, Boot: *boot, Level: *level, Format: *format,
		Colour: colour(stdout, env), InspectToken: cfg.InspectToken, InspectTrust: cfg.InspectTrust,
	}
	if config.DatabaseURL(env) != "" {
		d, cfg, err := openStore(ctx, env, "")
		if err != nil {
			return err
		}
		defer d.Close()
		o.Store, o.Dialect, o.Database = d, string(cfg.DB.Dialect), cfg.DB.Database
	}
	return cli.Logs(ctx, o, stdout, stderr)
}
