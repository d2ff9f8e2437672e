package main

// voltro bench: benchmarks printed beside the database's own commit rate.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/voltro/voltro/internal/bench"
)

func runBench(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "messages" {
		fmt.Fprintln(stderr, "usage: voltro bench messages [--db URL] [--senders 8] [--duration 5s] [--sequential 1000] [--idle 20s]")
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			return errHelp
		}
		return errUsage
	}
	fs := flags("bench messages", "bench messages [flags]", stderr)
	db := fs.String("db", "", "database URL (default DB_URL); PostgreSQL or MariaDB for meaningful figures")
	senders := fs.Int("senders", 8, "concurrent senders in the throughput phase")
	duration := fs.Duration("duration", 5*time.Second, "length of the throughput phase")
	seq := fs.Int("sequential", 1000, "requests in the sequential latency phase")
	idle := fs.Duration("idle", 20*time.Second, "idle window for the runner's query rate (negative skips it)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	url := *db
	if url == "" {
		url = env("DB_URL")
	}
	if url == "" {
		return fmt.Errorf("set DB_URL or --db to the database to measure")
	}
	fmt.Fprintln(stderr, "measuring the database commit rate, then sequential and concurrent request/reply, then an idle window…")
	res, err := bench.Messages(ctx, bench.MessagesConfig{DBURL: url, Env: env, Senders: *senders, Duration: *duration, Sequential: *seq, Idle: *idle})
	if err != nil {
		return err
	}
	res.Print(stdout)
	return nil
}
