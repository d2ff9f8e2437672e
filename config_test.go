package voltro

// WithConfig: set fields win over the environment, unset ones leave it in
// force, WithDB wins over both, and every field stands for a variable.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestConfigOverTheEnvironment(t *testing.T) {
	ctx := context.Background()
	env := map[string]string{"DB_URL": "memory:", "POD_NAME": "env-pod", "VOLTRO_SHARDS": "4", "VOLTRO_CLUSTER_SECRET": "env-secret", "VOLTRO_RETENTION": "2d"}
	quiet := WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	a, err := New(ctx, quiet, WithEnv(func(k string) string { return env[k] }), WithConfig(Config{
		DatabaseURL: "sqlite:/nonexistent/dir/x.db", ReplicaID: "cfg-pod", Shards: 8, Heartbeat: 700 * time.Millisecond,
		DeadLetterRetention: -1, ScheduleCoordination: CoordinationSingle, DisableCDC: true, ProcessName: "cfgproc",
	}), WithDB("memory:"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	cfg := a.e.Config()
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"database (WithDB wins)", string(cfg.DB.Dialect), "memory"},
		{"replica id (Config wins)", cfg.ReplicaID, "cfg-pod"},
		{"shards (Config wins)", cfg.ShardCount, 8},
		{"heartbeat", cfg.Heartbeat, 700 * time.Millisecond},
		{"dead-letter retention (negative keeps for ever)", cfg.DeadLetterRetention, time.Duration(0)},
		{"retention (unset: the environment's)", cfg.Retention, 48 * time.Hour},
		{"cluster secret (unset: the environment's)", cfg.ClusterSecret, "env-secret"},
		{"cdc", cfg.CDC, false},
		{"process name", cfg.ProcessName, "cfgproc"},
		{"schedule coordination", string(a.in.Scheduler.DefaultCoordination()), "single"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	_, err = New(ctx, quiet, WithEnv(func(string) string { return "" }), WithConfig(Config{DatabaseURL: "memory:", ShardLock: "bogus"}))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "VOLTRO_WORKFLOW_SHARD_LOCK") {
		t.Fatalf("a bad field: %v, want invalid_config naming its variable", err)
	}
}

// Every field of Config, set, becomes its own variable.
func TestEveryConfigFieldIsAVariable(t *testing.T) {
	var cfg Config
	v := reflect.ValueOf(&cfg).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(time.Hour))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"g"}))
		default:
			t.Fatalf("field %s: kind %s not covered", v.Type().Field(i).Name, f.Kind())
		}
	}
	set := reflect.ValueOf(cfg.settings())
	got := 0
	for i := range set.NumField() {
		if set.Type().Field(i).IsExported() && !set.Field(i).IsZero() {
			got++
		}
	}
	if want := v.NumField(); got != want {
		t.Fatalf("%d of the %d fields become a setting: %+v", got, want, cfg.settings())
	}
}
