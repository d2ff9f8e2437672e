package main

// Help and bad arguments, for every command and subcommand of the table:
// --help prints the usage once to stdout and exits 0; a value outside its
// set is a clear error with exit 2.

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestEveryCommandAnswersHelpOnce(t *testing.T) {
	noEnv := func(string) string { return "" }
	for name, cmd := range commands() {
		calls := [][]string{{name, "--help"}, {name, "-h"}}
		if len(cmd.subs) > 0 {
			calls = append(calls, []string{name, "help"})
		}
		for _, sub := range cmd.subs {
			calls = append(calls, []string{name, sub, "--help"}, []string{name, sub, "-h"})
		}
		for _, args := range calls {
			var out, errb bytes.Buffer
			code := run(context.Background(), args, noEnv, &out, &errb)
			what := "voltro " + strings.Join(args, " ")
			if code != 0 {
				t.Errorf("%s exited %d, want 0:\n%s%s", what, code, out.String(), errb.String())
			}
			if errb.Len() != 0 {
				t.Errorf("%s wrote to stderr, want the usage on stdout:\n%s", what, errb.String())
			}
			if n := strings.Count(out.String(), "usage:"); n != 1 {
				t.Errorf("%s printed %d usage lines, want 1:\n%s", what, n, out.String())
			}
			if s := out.String(); strings.Contains(s, "usage: voltro usage") || strings.Contains(s, "help requested") {
				t.Errorf("%s: %s", what, s)
			}
		}
	}
}

func TestOutOfSetValuesAreUsageErrors(t *testing.T) {
	env := map[string]string{"DB_URL": "memory:"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"workflows", "list", "--status", "bogus"}, []string{`--status "bogus" is not a run status`, "running, suspended, completed, failed, cancelled"}},
		{[]string{"workflows", "list", "--format", "yaml"}, []string{`--format "yaml"`}},
		{[]string{"messages", "list", "--state", "bogus"}, []string{`--state "bogus"`, "pending, claimed, processed or dead"}},
		{[]string{"schedules", "list", "--format", "yaml"}, []string{`--format "yaml"`}},
		{[]string{"schedules", "frobnicate"}, []string{`unknown subcommand "frobnicate"`}},
		{[]string{"watch", "--format", "yaml", "t"}, []string{`--format "yaml"`}},
		{[]string{"cluster", "status", "--format", "yaml"}, []string{`--format "yaml"`}},
		{[]string{"gc", "--format", "yaml"}, []string{`--format "yaml"`}},
		{[]string{"bench", "workflows", "--starters", "-1"}, []string{`--starters -1: use 0 (a goroutine per run)`}},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, func(k string) string { return env[k] }, &out, &errb)
		what := "voltro " + strings.Join(c.args, " ")
		if code != 2 {
			t.Errorf("%s exited %d, want 2 (usage):\n%s%s", what, code, out.String(), errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("%s printed to stdout: %s", what, out.String())
		}
		for _, w := range c.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%s: stderr %q lacks %q", what, errb.String(), w)
			}
		}
		if first := strings.SplitN(errb.String(), "\n", 2)[0]; strings.Count(first, "voltro") != 1 {
			t.Errorf("%s: %q says voltro more than once", what, first)
		}
	}
}

// A library error under the command's prefix does not say voltro twice.
func TestErrorPrefixSaysVoltroOnce(t *testing.T) {
	env := map[string]string{"DB_URL": "memory:"}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"workflows", "start", "w", "--input", "{bad", "--force"}, func(k string) string { return env[k] }, &out, &errb)
	if got, want := errb.String(), "voltro workflows: invalid_argument: --input is not valid JSON: {bad\n"; code != 1 || got != want {
		t.Fatalf("exit %d, stderr %q; want 1 and %q", code, got, want)
	}
}

// A workflows subcommand given too many or too few arguments says which,
// then its own usage line, and exits 2.
func TestWorkflowsWrongArgumentsSayWhy(t *testing.T) {
	env := func(k string) string { return map[string]string{"DB_URL": "memory:"}[k] }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"start", "NAME", "{}"}, `voltro workflows start: unexpected arguments ["{}"]`},
		{[]string{"start"}, `voltro workflows start: missing NAME`},
		{[]string{"signal"}, `voltro workflows signal: missing ID NAME`},
		{[]string{"get", "a", "b"}, `voltro workflows get: unexpected arguments ["b"]`},
		{[]string{"list", "x"}, `voltro workflows list: unexpected arguments ["x"]`},
		{[]string{"cancel", "a", "b", "c"}, `voltro workflows cancel: unexpected arguments ["b" "c"]`},
		{[]string{"signal", "ID"}, `voltro workflows signal: missing NAME`},
		{[]string{"signal", "ID", "go", "{}"}, `voltro workflows signal: unexpected arguments ["{}"]`},
		{[]string{"resume", "a", "b"}, `voltro workflows resume: unexpected arguments ["b"]`},
		{[]string{"retry", "a", "--format", "json", "b"}, `voltro workflows retry: unexpected arguments ["b"]`},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"workflows"}, c.args...), env, &out, &errb)
		what := "voltro workflows " + strings.Join(c.args, " ")
		lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
		if code != 2 || out.Len() != 0 || len(lines) != 2 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2, nothing, a reason and a usage line", what, code, out.String(), errb.String())
			continue
		}
		if lines[0] != c.want {
			t.Errorf("%s: reason %q, want %q", what, lines[0], c.want)
		}
		if want := "usage: voltro workflows " + c.args[0]; !strings.HasPrefix(lines[1], want) {
			t.Errorf("%s: usage line %q, want it to start %q", what, lines[1], want)
		}
	}
}
