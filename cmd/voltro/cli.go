package main

// Shared CLI plumbing: flag sets, opening the store of DB_URL, output.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
)

// flags builds a flag set whose errors and --help go to stderr (stdout when
// help is asked for, see run). synopsis is what follows "usage: voltro ",
// or a whole usage text that starts with "usage:".
func flags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("voltro "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usageText(synopsis))
		fs.PrintDefaults()
	}
	return fs
}

// usageText is synopsis as a usage text, said once.
func usageText(synopsis string) string {
	if strings.HasPrefix(synopsis, "usage:") {
		return synopsis
	}
	return "usage: voltro " + synopsis
}

// parse parses args, mapping flag errors to errHelp / errUsage.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return errUsage
	}
	return nil
}

// openStore opens and migrates the store of DB_URL (or dbURL).
func openStore(ctx context.Context, env func(string) string, dbURL string) (store.Driver, config.Config, error) {
	cfg, err := config.FromEnv(env, dbURL)
	if err != nil {
		return nil, cfg, err
	}
	if config.DatabaseURL(env) == "" && dbURL == "" {
		return nil, cfg, fmt.Errorf("DB_URL is not set: point it at the cluster's database (postgres://, mariadb://, sqlite:<file>)")
	}
	d, err := open.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, cfg, err
	}
	if err := d.Migrate(ctx); err != nil {
		d.Close()
		return nil, cfg, err
	}
	return d, cfg, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// colour reports whether w is a terminal that wants colour.
func colour(w io.Writer, env func(string) string) bool {
	if config.NoColor(env) {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

func runVersion(_ context.Context, args []string, _ func(string) string, stdout, stderr io.Writer) error {
	fs := flags("version", "version", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "voltro", version)
	return nil
}

func runMigrate(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flags("migrate", "migrate [--db URL]", stderr)
	db := fs.String("db", "", "database URL (default DB_URL)")
	if err := parse(fs, args); err != nil {
		return err
	}
	d, cfg, err := openStore(ctx, env, *db)
	if err != nil {
		return err
	}
	defer d.Close()
	fmt.Fprintf(stdout, "migrations applied to the %s store %s\n", cfg.DB.Dialect, cfg.DB.Database)
	return nil
}
