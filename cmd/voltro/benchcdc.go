// `voltro bench cdc`: its flags; the measuring is cdc.RunBench.

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/errs"
)

// benchCDCUsage is the help text of `voltro bench cdc`.
const benchCDCUsage = `usage: voltro bench cdc [--db URL] [--samples 500] [--events 10000] [--writers 4] [--batch 1]

Measures, between two instances on one database (DB_URL or --db), the
latency from a write to its delta on the other instance (sequential p50/p99),
and the events per second a remote subscriber receives while --writers write
--events rows (--batch rows per transaction); prints the database's own
single-row commit rate from the same run beside them.`

// runBenchCDC parses args (after "bench cdc"), runs cdc.RunBench and
// prints the result to stdout.
func runBenchCDC(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flags("bench cdc", benchCDCUsage, stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, benchCDCUsage); fs.PrintDefaults() }
	db := fs.String("db", "", "database URL (default DB_URL)")
	samples := fs.Int("samples", 500, "sequential write -> delivery rounds")
	events := fs.Int("events", 10000, "rows written in the rate phase")
	writers := fs.Int("writers", 4, "concurrent writers in the rate phase")
	batch := fs.Int("batch", 1, "rows per transaction in the rate phase")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := cdc.ConfigFromEnv(env)
	if err != nil {
		return err
	}
	if *db != "" {
		cfg.URL = *db
	}
	if cfg.URL == "" {
		return errs.New(errs.CodeInvalidConfig, "bench cdc: set DB_URL or --db")
	}
	fmt.Fprintln(stderr, "measuring the database commit rate, then sequential and concurrent write -> remote delivery…")
	res, err := cdc.RunBench(ctx, cdc.BenchConfig{
		URL: cfg.URL, Dialect: cfg.Dialect, ReplicationURL: cfg.ReplicationURL,
		Samples: *samples, Events: *events, Writers: *writers, BatchSize: *batch,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(stdout, res.String())
	return err
}
