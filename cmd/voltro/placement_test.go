package main

// workflows start's placement flags (--queue, --partition, --priority,
// --at, --after) are judged before the database is opened: on the memory
// store, which a client refuses, a bad value is a usage error (exit 2)
// naming the flag, and a good one gets as far as the refusal (exit 1).

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestStartPlacementFlagsAreCheckedBeforeTheDatabase(t *testing.T) {
	env := func(k string) string { return map[string]string{"DB_URL": "memory:"}[k] }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--at", "2026-12-05"}, `--at "2026-12-05" is not an RFC 3339 time`},
		{[]string{"--at", "tomorrow", "--queue", "q"}, `--at "tomorrow" is not an RFC 3339 time`},
		{[]string{"--after", "10"}, `--after "10" is not a duration`},
		{[]string{"--after", "ten minutes"}, `--after "ten minutes" is not a duration`},
		{[]string{"--after", "-5m"}, `--after -5m is negative`},
		{[]string{"--at", "2026-12-05T17:00:00Z", "--after", "10m"}, `--at and --after both set when the run may start: give one`},
		{[]string{"--queue", "q", "--after", "1m", "--at", "2026-12-05T17:00:00Z"}, `--at and --after both set`},
		{[]string{"--partition", "acme"}, `--partition "acme" needs --queue`},
		{[]string{"--priority", "3"}, `--priority 3 needs --queue`},
		{[]string{"--priority", "0"}, `--priority 0 needs --queue`},                // given, even as the default
		{[]string{"--queue", "", "--priority", "1"}, `--priority 1 needs --queue`}, // an empty queue is none
		{[]string{"--queue", "q", "--priority", "high"}, `invalid value "high" for flag -priority`},
	} {
		args := append([]string{"workflows", "start", "w"}, c.args...)
		var out, errb bytes.Buffer
		code := run(context.Background(), args, env, &out, &errb)
		what := "voltro " + strings.Join(args, " ")
		if code != 2 || out.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q; want 2 and nothing", what, code, out.String())
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: stderr %q lacks %q", what, errb.String(), c.want)
		}
		if strings.Contains(errb.String(), "memory store") {
			t.Errorf("%s: the database was opened: %s", what, errb.String())
		}
	}
}

func TestStartPlacementFlagsThatFitReachTheDatabase(t *testing.T) {
	env := func(k string) string { return map[string]string{"DB_URL": "memory:"}[k] }
	for _, args := range [][]string{
		{"start", "w", "--queue", "q"},
		{"start", "w", "--queue", "q", "--partition", "acme", "--priority", "-3"},
		{"start", "w", "--queue", "q", "--priority", "0", "--at", "2026-12-05T18:00:00+01:00"},
		{"start", "w", "--at", "2026-12-05T17:00:00.250Z"}, // deferred, on no queue
		{"start", "w", "--after", "1h30m", "--queue", "q"},
		{"start", "w", "--after", "0s"},
		{"list", "--queue", "q", "--status", "queued"},
		{"list", "--at", "bogus", "--partition", "p"}, // start's flags: list ignores them
	} {
		args = append([]string{"workflows"}, args...)
		var out, errb bytes.Buffer
		code := run(context.Background(), args, env, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "a memory store is the process's own") {
			t.Errorf("voltro %s: exit %d, stderr %q; want 1 and the memory store's refusal", strings.Join(args, " "), code, errb.String())
		}
	}
}

func TestPlacementOptions(t *testing.T) {
	for _, c := range []struct {
		at, after string
		p         placement
		n         int // start options
	}{
		{"", "", placement{}, 0},
		{"", "", placement{queue: "q"}, 1},
		{"", "", placement{queue: "q", partition: "acme", priority: 2}, 3},
		{"2026-12-05T17:00:00Z", "", placement{queue: "q"}, 2},
		{"", "10m", placement{}, 1},
		{"", "0s", placement{}, 0}, // no deferral at all
	} {
		p, err := checkPlacement(c.p, c.at, c.after, c.p.priority != 0)
		if err != nil {
			t.Fatalf("%+v %q %q: %v", c.p, c.at, c.after, err)
		}
		if n := len(p.options()); n != c.n {
			t.Errorf("%+v %q %q: %d start options, want %d", c.p, c.at, c.after, n, c.n)
		}
	}
	p, err := checkPlacement(placement{}, "2026-12-05T18:00:00+01:00", "", false)
	if want := time.Date(2026, 12, 5, 17, 0, 0, 0, time.UTC); err != nil || !p.at.Equal(want) {
		t.Errorf("--at with an offset: %v, %v", p.at, err)
	}
}
