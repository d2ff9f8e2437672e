package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func env(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"POD_NAME": "api-0"}), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.DB.Dialect != store.Memory || c.RunnerPort != 34000 || c.ShardLock != store.LockAuto || c.RunnerStorage != RunnerStorageMemory ||
		c.Heartbeat != 10*time.Second || c.ShardCount != 300 || c.Groups[0] != "default" || !c.CDC || c.ReplicaID != "api-0" || c.InspectAddr != "127.0.0.1:0" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestInvalidValuesFailBootNamingValueAndChoices(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"VOLTRO_WORKFLOW_SHARD_LOCK": "galera"}, []string{`"galera"`, "auto", "row", "advisory"}},
		{map[string]string{"VOLTRO_WORKFLOW_RUNNER_STORAGE": "disk"}, []string{`"disk"`, "sql", "memory"}},
		{map[string]string{"DB_URL": "sqlite:app.db", "VOLTRO_WORKFLOW_RUNNER_STORAGE": "sql"}, []string{"VOLTRO_WORKFLOW_RUNNER_STORAGE=sql", "sqlite", "postgres or mariadb"}},
		{map[string]string{"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "soon"}, []string{"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT", `"soon"`}},
		{map[string]string{"VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT": "1ms"}, []string{"at least"}},
		{map[string]string{"CDC": "maybe"}, []string{`"maybe"`, "1 or 0"}},
		{map[string]string{"VOLTRO_SINGLE_HOST": "yes please"}, []string{`"yes please"`, "VOLTRO_SINGLE_HOST", "1", "0"}},
		{map[string]string{"VOLTRO_SHARDS": "-3"}, []string{`"-3"`}},
		{map[string]string{"VOLTRO_SHARD_GROUPS": "a/b"}, []string{`"a/b"`}},
		{map[string]string{"DB_URL": "oracle://x"}, []string{"unknown scheme"}},
		{map[string]string{"DB_URL": "postgres://x/db", "DB_DIALECT": "mariadb"}, []string{"DB_DIALECT=mariadb", "postgres"}},
		{map[string]string{"DB_DIALECT": "db2"}, []string{`"db2"`}},
	}
	for _, c := range cases {
		_, err := FromEnv(env(c.env), "")
		if !errors.Is(err, errs.ErrInvalidConfig) {
			t.Fatalf("%v: want invalid_config, got %v", c.env, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%v: message %q lacks %q", c.env, err, w)
			}
		}
	}
}

func TestRunnerPortFallsBackWithWarning(t *testing.T) {
	for _, v := range []string{"tcp://10.1.2.3:34000", "0", "65536", "abc", "-1"} {
		c, err := FromEnv(env(map[string]string{"DB_URL": "postgres://db/app", "VOLTRO_WORKFLOW_RUNNER_PORT": v}), "")
		if err != nil {
			t.Fatalf("%q must not fail boot: %v", v, err)
		}
		if c.RunnerPort != 34000 || len(c.Warnings) == 0 || !strings.Contains(c.Warnings[0], v) {
			t.Fatalf("%q: port %d warnings %v", v, c.RunnerPort, c.Warnings)
		}
	}
	c, err := FromEnv(env(map[string]string{"VOLTRO_WORKFLOW_RUNNER_PORT": "34001"}), "")
	if err != nil || c.RunnerPort != 34001 || len(c.Warnings) != 0 {
		t.Fatalf("valid port: %+v %v", c, err)
	}
}

// SQLite and memory stores (and VOLTRO_WORKFLOW_RUNNER_STORAGE=memory) listen
// on no runner port: a value that is no port is nothing to warn about there.
func TestRunnerPortWarningOnlyWhereAPortIsUsed(t *testing.T) {
	for _, m := range []map[string]string{
		{"DB_URL": "sqlite:app.db"},
		{"DB_URL": "memory:"},
		{"DB_URL": "postgres://db/app", "VOLTRO_WORKFLOW_RUNNER_STORAGE": "memory", "VOLTRO_CLUSTER_SECRET": "s"},
	} {
		m["VOLTRO_WORKFLOW_RUNNER_PORT"] = "tcp://10.1.2.3:34000"
		c, err := FromEnv(env(m), "")
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		for _, w := range c.Warnings {
			if strings.Contains(w, "VOLTRO_WORKFLOW_RUNNER_PORT") {
				t.Errorf("%v: warns about the runner port it does not use: %s", m, w)
			}
		}
	}
}

func TestLocalhostRiskOnlyForSQLRunners(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"DB_URL": "postgres://u@db/app", "VOLTRO_CLUSTER_SECRET": "s"}), "")
	if err != nil {
		t.Fatal(err)
	}
	if !c.LocalhostRisk || c.RunnerHost != "localhost" || !strings.Contains(strings.Join(c.Warnings, " "), "POD_IP") {
		t.Fatalf("a SQL runner on localhost must be warned: %+v", c)
	}
	c, _ = FromEnv(env(map[string]string{"DB_URL": "postgres://u@db/app", "POD_IP": "10.0.0.7", "VOLTRO_CLUSTER_SECRET": "s"}), "")
	if c.LocalhostRisk || c.RunnerAddress() != "10.0.0.7:34000" {
		t.Fatalf("POD_IP: %+v", c)
	}
	c, _ = FromEnv(env(map[string]string{"DB_URL": "postgres://u@db/app", "POD_IP": "10.0.0.7", "VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_CLUSTER_SECRET": "s"}), "")
	if !c.LocalhostRisk {
		t.Fatalf("the explicit host wins and is loopback: %+v", c)
	}
	c, _ = FromEnv(env(map[string]string{"DB_URL": "sqlite:app.db"}), "")
	if c.LocalhostRisk || c.Clustered() {
		t.Fatalf("SQLite is single-process: %+v", c)
	}
}

func TestDialectResolution(t *testing.T) {
	for url, want := range map[string]store.Dialect{
		"postgres://u@h/db": store.Postgres, "postgresql://u@h/db": store.Postgres, "mariadb://root@h/db": store.MariaDB,
		"mysql://root@h/db": store.MySQL, "sqlite:x.db": store.SQLite, "data/app.db": store.SQLite, "memory:": store.Memory,
	} {
		c, err := FromEnv(env(map[string]string{"VOLTRO_CLUSTER_SECRET": "s"}), url)
		if err != nil || c.DB.Dialect != want {
			t.Fatalf("%s: %v %v", url, c.DB.Dialect, err)
		}
	}
	c, err := FromEnv(env(map[string]string{"DB_DIALECT": "mariadb"}), "mysql://root@h:3307/db")
	if err != nil || c.DB.Dialect != store.MariaDB || !strings.Contains(c.DB.DSN, "tcp(h:3307)/db") {
		t.Fatalf("DB_DIALECT=mariadb on mysql://: %+v %v", c.DB, err)
	}
}

// A loopback runner on a SQL store is flagged with the one wording every
// surface uses; VOLTRO_SINGLE_HOST=1 declares it intended and silences it.
func TestLocalhostRiskAndSingleHost(t *testing.T) {
	base := map[string]string{"DB_URL": "postgres://u@db/app", "VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1"}
	c, err := FromEnv(env(base), "")
	if err != nil {
		t.Fatal(err)
	}
	warned := strings.Join(c.Warnings, "\n")
	if !c.LocalhostRisk || !strings.Contains(warned, LocalhostEffect) || !strings.Contains(warned, LocalhostFix) {
		t.Fatalf("loopback runner: risk %v, warnings %q", c.LocalhostRisk, warned)
	}
	if strings.Contains(warned, "resume break") {
		t.Fatalf("the warning must not claim resume breaks: %q", warned)
	}
	base["VOLTRO_SINGLE_HOST"] = "1"
	c, err = FromEnv(env(base), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.LocalhostRisk || !c.SingleHost || strings.Contains(strings.Join(c.Warnings, "\n"), "loopback") || strings.Contains(strings.Join(c.Warnings, "\n"), LocalhostEffect) {
		t.Fatalf("declared single host: risk %v, warnings %q", c.LocalhostRisk, c.Warnings)
	}
}
