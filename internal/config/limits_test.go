package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// "," used to be accepted as no groups at all: the cluster config stored {}
// and every correctly configured runner refused to start.
func TestShardGroupsRejectEmptyAndDuplicate(t *testing.T) {
	for _, g := range []string{",", " , ", "a,", ",a", "a,,b", "a, ,b", "a,a"} {
		c, err := FromEnv(env(map[string]string{"VOLTRO_SHARD_GROUPS": g}), "")
		if !errors.Is(err, errs.ErrInvalidConfig) || !strings.Contains(err.Error(), "VOLTRO_SHARD_GROUPS") {
			t.Errorf("VOLTRO_SHARD_GROUPS=%q: groups %q, err %v; want invalid_config", g, c.Groups, err)
		}
	}
	c, err := FromEnv(env(map[string]string{"VOLTRO_SHARD_GROUPS": " default , payments "}), "")
	if err != nil || strings.Join(c.Groups, "|") != "default|payments" {
		t.Fatalf("good groups: %q %v", c.Groups, err)
	}
}

// 18446744074 seconds used to wrap around to a 290ms heartbeat.
func TestDurationsDetectOverflowAndBound(t *testing.T) {
	for _, v := range []string{"18446744074", "9223372037", "99999999999999999999", "-18446744074", "2h", "3601", "100000h", "9223372036854775807ns", "1e3s"} {
		for _, name := range []string{"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT", "VOLTRO_POLL_INTERVAL"} {
			c, err := FromEnv(env(map[string]string{name: v}), "")
			if !errors.Is(err, errs.ErrInvalidConfig) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "at most 1h") {
				t.Errorf("%s=%s: heartbeat %v poll %v err %v; want invalid_config naming the bound", name, v, c.Heartbeat, c.PollInterval, err)
			}
		}
	}
	for v, want := range map[string]time.Duration{"10": 10 * time.Second, "3600": time.Hour, "1h": time.Hour, "250ms": 250 * time.Millisecond} {
		c, err := FromEnv(env(map[string]string{"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": v, "VOLTRO_POLL_INTERVAL": v}), "")
		if err != nil || c.Heartbeat != want || c.PollInterval != want {
			t.Errorf("%s: heartbeat %v poll %v err %v; want %v", v, c.Heartbeat, c.PollInterval, err, want)
		}
	}
}

// FuzzFromEnv: configuration from the environment never panics, and a
// configuration it accepts is one a runner can start with.
func FuzzFromEnv(f *testing.F) {
	f.Add("", "", "", "", "", "", "")
	f.Add("postgres://u@db/app", "10s", "1s", "300", "default,payments", "34000", "1")
	f.Add("mysql://root:pw@h:bad/db", "18446744074", "-1", "0", ",", "tcp://1.2.3.4:34000", "yes")
	f.Add("sqlite:app.db", "9223372036854775807ns", "1e9h", "100001", "a,,b", "65536", "0")
	f.Fuzz(func(t *testing.T, dbURL, heartbeat, poll, shards, groups, port, single string) {
		m := map[string]string{
			"DB_URL": dbURL, "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": heartbeat, "VOLTRO_POLL_INTERVAL": poll,
			"VOLTRO_SHARDS": shards, "VOLTRO_SHARD_GROUPS": groups, "VOLTRO_WORKFLOW_RUNNER_PORT": port,
			"VOLTRO_SINGLE_HOST": single, "POD_NAME": "fuzz-0",
		}
		c, err := FromEnv(env(m), "")
		if err != nil {
			if !errors.Is(err, errs.ErrInvalidConfig) {
				t.Fatalf("%v: error %v is not invalid_config", m, err)
			}
			return
		}
		if c.Heartbeat < 100*time.Millisecond || c.Heartbeat > MaxHeartbeat {
			t.Fatalf("%v: heartbeat %v", m, c.Heartbeat)
		}
		if c.PollInterval != 0 && (c.PollInterval < 10*time.Millisecond || c.PollInterval > MaxPollInterval) {
			t.Fatalf("%v: poll interval %v", m, c.PollInterval)
		}
		if c.ShardCount < 1 || c.ShardCount > 100000 || c.RunnerPort < 1 || c.RunnerPort > 65535 {
			t.Fatalf("%v: shards %d port %d", m, c.ShardCount, c.RunnerPort)
		}
		if len(c.Groups) == 0 {
			t.Fatalf("%v: no groups", m)
		}
		seen := map[string]bool{}
		for _, g := range c.Groups {
			if g == "" || strings.ContainsAny(g, "/ ,") || seen[g] {
				t.Fatalf("%v: groups %q", m, c.Groups)
			}
			seen[g] = true
		}
	})
}
