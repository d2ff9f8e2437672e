package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/errs"
)

func TestClusterSecretSetting(t *testing.T) {
	base := func(kv ...string) map[string]string {
		m := map[string]string{"DB_URL": "postgres://u@db/app", "POD_IP": "10.0.0.7"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// Unset: no derived secret, no warning; the engine reads the stored one.
	c, err := FromEnv(env(base()), "")
	if err != nil || c.ClusterSecret != "" {
		t.Fatalf("unset: %q %v", c.ClusterSecret, err)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, "VOLTRO_CLUSTER_SECRET") {
			t.Fatalf("unset secret warned: %s", w)
		}
	}
	// A rotation pair is kept as set.
	c, err = FromEnv(env(base("VOLTRO_CLUSTER_SECRET", " new-0123456789abcdef , old-0123456789abcdef ")), "")
	if err != nil || c.ClusterSecret != "new-0123456789abcdef , old-0123456789abcdef" || len(c.Warnings) != 0 {
		t.Fatalf("rotation pair: %q %v %v", c.ClusterSecret, c.Warnings, err)
	}
	// A short secret is warned about; a list of nothing is refused.
	c, _ = FromEnv(env(base("VOLTRO_CLUSTER_SECRET", "short")), "")
	if !strings.Contains(strings.Join(c.Warnings, " "), "5 characters") {
		t.Fatalf("short secret not warned: %v", c.Warnings)
	}
	if _, err := FromEnv(env(base("VOLTRO_CLUSTER_SECRET", " , ")), ""); !errors.Is(err, errs.ErrInvalidConfig) {
		t.Fatalf("empty list: %v", err)
	}
}

func TestRPCMaxBody(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"DB_URL": "memory:"}), "")
	if err != nil || c.RPCMaxBody != DefaultRPCMaxBody {
		t.Fatalf("default: %d %v", c.RPCMaxBody, err)
	}
	c, err = FromEnv(env(map[string]string{"DB_URL": "memory:", "VOLTRO_RPC_MAX_BODY": "65536"}), "")
	if err != nil || c.RPCMaxBody != 65536 {
		t.Fatalf("set: %d %v", c.RPCMaxBody, err)
	}
	for _, v := range []string{"1", "-5", "1MiB", "99999999999999999999", "1073741824"} {
		if _, err := FromEnv(env(map[string]string{"DB_URL": "memory:", "VOLTRO_RPC_MAX_BODY": v}), ""); !errors.Is(err, errs.ErrInvalidConfig) {
			t.Errorf("VOLTRO_RPC_MAX_BODY=%s: %v", v, err)
		}
	}
}
