package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// A value set in code takes the place of the environment's, typed, and of
// whatever was wrong with the environment's text.
func TestOverrideReplacesTheEnvironment(t *testing.T) {
	s := FromEnvironment(env(map[string]string{"VOLTRO_SHARDS": "many", "POD_NAME": "env-pod", "VOLTRO_RETENTION": "2d"}))
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), `VOLTRO_SHARDS="many"`) {
		t.Fatalf("the environment's bad shard count: %v", err)
	}
	s.Override(Settings{Shards: 8, ReplicaID: "code-pod", DeadLetterRetention: -1})
	c, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if c.ShardCount != 8 || c.ReplicaID != "code-pod" || c.Retention != 48*time.Hour || c.DeadLetterRetention != 0 {
		t.Fatalf("shards %d, replica %q, retention %v, dead letters %v", c.ShardCount, c.ReplicaID, c.Retention, c.DeadLetterRetention)
	}
}

// Values set in code are checked as the variables are, and the error
// names the variable.
func TestSettingsCheckedLikeTheirVariables(t *testing.T) {
	for _, c := range []struct {
		set  Settings
		want string
	}{
		{Settings{Shards: -3}, `VOLTRO_SHARDS="-3"`},
		{Settings{Heartbeat: time.Millisecond}, "VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT"},
		{Settings{PollInterval: 2 * time.Hour}, "VOLTRO_POLL_INTERVAL"},
		{Settings{Retention: 500 * time.Millisecond}, "VOLTRO_RETENTION"},
		{Settings{RPCMaxBody: 1}, "VOLTRO_RPC_MAX_BODY"},
		{Settings{ShardLock: "bogus"}, "VOLTRO_WORKFLOW_SHARD_LOCK"},
		{Settings{ScheduleCoordination: "quorum"}, "VOLTRO_SCHEDULE_COORDINATION"},
		{Settings{ShardGroups: "a,,b"}, "VOLTRO_SHARD_GROUPS"},
	} {
		err := c.set.Validate()
		if !errors.Is(err, errs.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want invalid_config naming %s", c.set, err, c.want)
		}
	}
	if c, err := (Settings{RunnerPort: 70000, DatabaseURL: "postgres://db/app"}).Resolve(); err != nil || c.RunnerPort != DefaultRunnerPort || len(c.Warnings) == 0 {
		t.Fatalf("a port out of range: %d %v %v, want the default with a warning", c.RunnerPort, c.Warnings, err)
	}
}

// Every setting has its variable.
func TestEverySettingHasAVariable(t *testing.T) {
	vars := Vars()
	seen := map[string]bool{}
	for _, v := range vars {
		if v == "" || seen[v] {
			t.Fatalf("variables %v: an empty or repeated name", vars)
		}
		seen[v] = true
	}
	if len(vars) < 30 {
		t.Fatalf("%d variables: %v", len(vars), vars)
	}
}
