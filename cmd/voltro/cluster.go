package main

// voltro cluster status: one row per running instance and the shared state
// of DB_URL's database. A thin wrapper over internal/status.

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/status"
	"github.com/voltro/voltro/internal/store"
)

const clusterSynopsis = "cluster status [--process NAME] [--format table|json]"

func runCluster(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "status" {
		fmt.Fprintln(stderr, "usage: voltro "+clusterSynopsis)
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
			return errHelp
		}
		return errUsage
	}
	fs := flags("cluster status", clusterSynopsis, stderr)
	process := fs.String("process", "", "only instances of this process name (or replica id)")
	format := fs.String("format", "table", "table or json")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return badArg("--format %q: use table or json", *format)
	}
	cfg, err := config.FromEnv(env, "")
	if err != nil {
		return err
	}
	dir, err := config.RegistryDir(env)
	if err != nil {
		return err
	}
	o := status.Options{
		RegistryDir: dir, Heartbeat: cfg.Heartbeat, InspectToken: cfg.InspectToken, InspectTrust: cfg.InspectTrust, Process: *process,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if config.DatabaseURL(env) != "" {
		var d store.Driver
		if d, cfg, err = openStore(ctx, env, ""); err != nil {
			return err
		}
		defer d.Close()
		o.Store, o.Dialect, o.Database = d, string(cfg.DB.Dialect), cfg.DB.Database
	}
	rep, local, err := status.Collect(ctx, o)
	if err != nil {
		return err
	}
	if *format == "json" {
		err = status.WriteJSON(stdout, rep)
	} else {
		err = status.WriteTable(stdout, rep, colour(stdout, env))
	}
	if _, perr := registry.Prune(local); perr != nil {
		fmt.Fprintf(stderr, "voltro cluster status: %v\n", perr)
	}
	return err
}
