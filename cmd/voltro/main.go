package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/errs"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error
	// subs are its subcommands, each answering --help (the table's test
	// walks them)
	subs []string
}

// commands is the command table; `voltro help` prints it.
func commands() map[string]command {
	return map[string]command{
		"dashboard": {"the cluster in a browser, from any machine: dashboard [--addr HOST:PORT]", runDashboard, nil},
		"demo":      {"run the demo app on the embedded default (a SQLite file here) or DB_URL", runDemo, nil},
		"gc":        {"delete what the retention no longer keeps, per table: gc [--dry-run] [--format json]", runGC, nil},
		"bench":     {"benchmarks beside the database's commit rate: bench messages | workflows | cdc", runBench, []string{"messages", "workflows", "cdc"}},
		"cluster":   {"one row per running instance and the shared state: cluster status [--process NAME] [--format json]", runCluster, []string{"status"}},
		"queues":    {"fleet-wide queues, their limits and runs: queues list | show NAME [--format json]", runQueues, []string{"list", "show"}},
		"schedules": {"schedules and their runs: schedules list | runs NAME [--format json]", runSchedules, []string{"list", "runs"}},
		"watch":     {"a table's changes as they commit: watch TABLE [--where COL=VALUE] [--format json]", runWatch, nil},
		"logs":      {"recent log records of every running instance, merged by time: logs [--tail N] [--boot] [--process NAME] [--format json]", runLogs, nil},
		"traces":    {"one workflow execution's timeline across instances: traces EXECUTION_ID [--format json]", runTraces, nil},
		"messages":  {"list messages and dead letters; dead-letter a type's backlog (dead --type T); replay a dead letter", runMessages, []string{"list", "dead", "replay"}},
		"migrate":   {"apply the database migrations of DB_URL and exit", runMigrate, nil},
		"version":   {"print the version", runVersion, nil},
		"workflows": {"start, get, list, cancel, signal, resume and retry workflow runs through DB_URL", runWorkflows, []string{"start", "get", "list", "cancel", "signal", "resume", "retry"}},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: voltro <command> [arguments]   (voltro <command> --help for details)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "environment: DB_URL (postgres://, mariadb://, mysql://, sqlite:<file>, memory:), DB_DIALECT,")
	fmt.Fprintln(w, "  POD_NAME, POD_IP / VOLTRO_WORKFLOW_RUNNER_HOST, VOLTRO_WORKFLOW_RUNNER_PORT (34000), VOLTRO_SINGLE_HOST (0|1),")
	fmt.Fprintln(w, "  VOLTRO_WORKFLOW_SHARD_LOCK (auto|row|advisory), VOLTRO_WORKFLOW_RUNNER_STORAGE (sql|memory),")
	fmt.Fprintln(w, "  VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT (10s), VOLTRO_CLUSTER_SECRET, VOLTRO_RPC_MAX_BODY,")
	fmt.Fprintln(w, "  VOLTRO_RUNNER_TLS_CERT / _KEY / _CA / _SERVER_NAME (PEM files: TLS, mutual with a CA), CDC (1|0);")
	fmt.Fprintln(w, "  VOLTRO_RETENTION (7d), VOLTRO_DEAD_LETTER_RETENTION (30d); see docs/configuration.md")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], config.ProcessEnv(), os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "voltro: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if wantsHelp(args[1:]) {
		// the usage is the output asked for: every command prints its
		// usage to what it takes as stderr
		stderr = stdout
	}
	if err := cmd.run(ctx, args[1:], env, stdout, stderr); err != nil {
		if errors.Is(err, errHelp) {
			return 0
		}
		if errors.Is(err, errUsage) {
			return 2
		}
		fmt.Fprintf(stderr, "voltro %s: %s\n", args[0], errorText(err))
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "(voltro %s --help shows the usage)\n", args[0])
			return 2
		}
		return 1
	}
	return 0
}

// errUsage: the flag package already printed what was wrong.
var errUsage = errors.New("usage")

// errHelp: --help was asked for and printed.
var errHelp = errors.New("help")

// usageError is a bad argument the flag package cannot judge (a value not
// in its set): printed with a pointer to --help, exit 2.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// badArg builds a usageError with code invalid_argument.
func badArg(format string, args ...any) error {
	return usageError{errs.New(errs.CodeInvalidArgument, format, args...)}
}

// wantsHelp reports whether args ask for help: a help flag before any
// "--", or the word help in place of a subcommand (elsewhere it may be a
// name: a signal, a table).
func wantsHelp(args []string) bool {
	if len(args) > 0 && args[0] == "help" {
		return true
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help", "--h":
			return true
		}
	}
	return false
}

// errorText is err for a line that already starts with "voltro CMD:": the
// library's "voltro " before an error code is not said again.
func errorText(err error) string {
	s := strings.TrimPrefix(err.Error(), "voltro ")
	return strings.ReplaceAll(s, ": voltro ", ": ")
}
