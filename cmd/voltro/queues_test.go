package main

// voltro queues list|show: the table, the one-queue view and their JSON,
// from fixed QueueInfo values (no database); the arguments it refuses.

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/golden"
)

var sampleQueues = []voltro.QueueInfo{
	{Name: "emails", Options: voltro.QueueOptions{RateLimit: voltro.Rate{Limit: 50, Period: time.Second}},
		Queued: 120, Due: 118, Active: 3, OldestDue: 1500 * time.Millisecond, RecentDequeues: 50},
	{Name: "llm", Options: voltro.QueueOptions{Concurrency: 10, WorkerConcurrency: 2, PartitionConcurrency: 1, RateLimit: voltro.Rate{Limit: 100, Period: time.Minute}},
		Queued: 7, Due: 5, Active: 10, OldestDue: 95 * time.Second, RecentDequeues: 31,
		Partitions: []voltro.QueuePartition{{Key: "acme", Queued: 4, Active: 1}, {Key: "", Queued: 2, Active: 0}, {Key: "evil\x1b[2J", Queued: 1, Active: 1}}},
	{Name: "nightly", Options: voltro.QueueOptions{Concurrency: 1}, Queued: 2, Due: 0},
}

func TestQueuesListTable(t *testing.T) {
	var out bytes.Buffer
	if err := printQueues(&out, sampleQueues, false); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "queues_list.golden", out.Bytes())
}

func TestQueuesShow(t *testing.T) {
	for _, c := range []struct {
		q    voltro.QueueInfo
		file string
	}{
		{sampleQueues[1], "queues_show.golden"},
		{sampleQueues[2], "queues_show_deferred.golden"},
		{voltro.QueueInfo{Name: "idle"}, "queues_show_idle.golden"},
	} {
		var out bytes.Buffer
		if err := printQueue(&out, c.q, false); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, c.file, out.Bytes())
	}
}

func TestQueuesJSON(t *testing.T) {
	var out bytes.Buffer
	if err := printQueues(&out, sampleQueues, true); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	llm := got[1]
	for k, want := range map[string]any{"name": "llm", "concurrency": 10.0, "workerConcurrency": 2.0, "partitionConcurrency": 1.0,
		"rateLimit": 100.0, "ratePeriodSeconds": 60.0, "queued": 7.0, "due": 5.0, "active": 10.0, "oldestDueSeconds": 95.0, "recentDequeues": 31.0} {
		if llm[k] != want {
			t.Errorf("%s: %v, want %v", k, llm[k], want)
		}
	}
	if parts, _ := llm["partitions"].([]any); len(parts) != 3 || parts[0].(map[string]any)["key"] != "acme" {
		t.Errorf("partitions: %v", llm["partitions"])
	}
	// no partitions: an empty list, not null
	if parts, ok := got[0]["partitions"].([]any); !ok || len(parts) != 0 {
		t.Errorf("a queue without partitions: %v", got[0]["partitions"])
	}
	out.Reset()
	if err := printQueue(&out, sampleQueues[0], true); err != nil {
		t.Fatal(err)
	}
	var one queueView
	if err := json.Unmarshal(out.Bytes(), &one); err != nil || one.Name != "emails" || one.RateLimit != 50 || one.RatePeriodSeconds != 1 || one.OldestDueSeconds != 1.5 {
		t.Errorf("show --format json: %+v, %v:\n%s", one, err, out.String())
	}
}

func TestQueuesWrongArgumentsAreUsageErrors(t *testing.T) {
	env := func(k string) string { return map[string]string{"DB_URL": "memory:"}[k] }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"queues"}, "missing subcommand: use list or show"},
		{[]string{"queues", "lsit"}, `unknown subcommand "lsit": use list or show`},
		{[]string{"queues", "list", "extra"}, `list: unexpected arguments ["extra"]`},
		{[]string{"queues", "show"}, "show: missing NAME"},
		{[]string{"queues", "show", "a", "b"}, `show: unexpected arguments ["b"]`},
		{[]string{"queues", "show", "a", "--format", "yaml"}, `--format "yaml": use table or json`},
		{[]string{"queues", "list", "--limit", "3"}, "flag provided but not defined: -limit"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, env, &out, &errb)
		what := "voltro " + strings.Join(c.args, " ")
		if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2, nothing and %q", what, code, out.String(), errb.String(), c.want)
		}
	}
	// a good one gets as far as the client, which the memory store refuses
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"queues", "show", "llm", "--format", "json"}, env, &out, &errb); code != 1 || !strings.Contains(errb.String(), "memory store") {
		t.Errorf("queues show llm: exit %d: %s", code, errb.String())
	}
}
