package main

// voltro bench: benchmarks printed beside the database's own commit rate.

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/voltro/voltro/internal/bench"
	"github.com/voltro/voltro/internal/config"
)

const benchUsage = `usage: voltro bench messages [--db URL] [--senders 8] [--duration 5s] [--sequential 1000] [--idle 20s]
       voltro bench workflows [--db URL] [--sequential 200] [--concurrent 2000] [--starters 16] [--failover]
                              [--retained N [--retained-db URL]]
       voltro bench cdc [flags]          (see voltro bench cdc --help)
Every figure is printed beside the database's own single-row commit rate from the same run.
For a multi-primary cluster (Galera), give bench workflows one URL per node, comma-separated,
and --failover=false: an instance runs on every node and the commit rate is the cluster's.`

func runBench(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, benchUsage)
		return errUsage
	}
	switch args[0] {
	case "messages":
	case "workflows":
		return runBenchWorkflows(ctx, args[1:], env, stdout, stderr)
	case "cdc":
		return runBenchCDC(ctx, args[1:], env, stdout, stderr)
	case "worker":
		// a worker process of bench workflows --failover; not for direct use
		return bench.Worker(ctx, env)
	case "--help", "-h", "help":
		fmt.Fprintln(stdout, benchUsage)
		return errHelp
	default:
		fmt.Fprintln(stderr, benchUsage)
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
		url = config.DatabaseURL(env)
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

func runBenchWorkflows(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flags("bench workflows", "bench workflows [flags]", stderr)
	db := fs.String("db", "", "database URL (default DB_URL); for a multi-primary cluster one per node, comma-separated")
	seq := fs.Int("sequential", 200, "(a) workflows run one after another")
	conc := fs.Int("concurrent", 2000, "(b) workflows started concurrently")
	starters := fs.Int("starters", bench.DefaultStarters, "(b) goroutines starting them, each one run after another; 0 for a goroutine per run (all at once)")
	failover := fs.Bool("failover", true, "(c, d) also measure SIGKILL failover and restart recovery with worker processes")
	retained := fs.Int("retained", 0, "(b') also run (b) on a database keeping this many finished runs, alternating with the fresh one")
	retainedDB := fs.String("retained-db", "", "the database for --retained (default: <database>_retained beside --db, created if missing)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *starters < 0 {
		return badArg("--starters %d: use 0 (a goroutine per run) or a count of goroutines", *starters)
	}
	if *starters == 0 {
		*starters = bench.OnePerRun
	}
	url := *db
	if url == "" {
		url = config.DatabaseURL(env)
	}
	if url == "" {
		return fmt.Errorf("set DB_URL or --db to the database to measure")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, "measuring the database commit rate, then sequential and concurrent workflows, then failover…")
	res, err := bench.Workflows(ctx, bench.WorkflowsConfig{DBURL: url, Env: env, Sequential: *seq, Concurrent: *conc, Starters: *starters, Failover: *failover, Executable: exe,
		Retained: *retained, RetainedDB: *retainedDB})
	if err != nil {
		return err
	}
	res.Print(stdout)
	return nil
}
