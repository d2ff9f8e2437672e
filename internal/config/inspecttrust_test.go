package config

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/errs"
)

// VOLTRO_INSPECT_TRUSTED_HOSTS: unset trusts loopback only; a list widens
// it; a bad entry stops with an error naming the variable, the value and
// what is allowed.
func TestInspectTrustedHosts(t *testing.T) {
	ctx := context.Background()
	base := func(v string) map[string]string {
		return map[string]string{"DB_URL": "memory:", "VOLTRO_INSPECT_TRUSTED_HOSTS": v}
	}
	c, err := FromEnv(env(base("")), "")
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "10.1.2.3": false, "api-0.internal": false} {
		if ok, _ := c.InspectTrust.Allows(ctx, host); ok != want {
			t.Errorf("unset: %s trusted %v", host, ok)
		}
	}
	c, err = FromEnv(env(base("10.0.0.0/8, api-0.internal")), "")
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"127.0.0.1": true, "10.1.2.3": true, "11.1.2.3": false, "api-0.internal": true} {
		if ok, _ := c.InspectTrust.Allows(ctx, host); ok != want {
			t.Errorf("widened: %s trusted %v", host, ok)
		}
	}
	for v, want := range map[string]string{
		"10.0.0.0/8,":   `VOLTRO_INSPECT_TRUSTED_HOSTS="10.0.0.0/8," is not valid: an entry is empty`,
		"10.1.2.3/8":    `VOLTRO_INSPECT_TRUSTED_HOSTS="10.1.2.3/8" is not valid: "10.1.2.3/8" has address bits set past /8: write 10.0.0.0/8`,
		"10.0.0.1:9464": `VOLTRO_INSPECT_TRUSTED_HOSTS="10.0.0.1:9464" is not valid: "10.0.0.1:9464" names a port`,
		"*":             "would trust every host name",
		"10.0.0.300":    `"10.0.0.300" is not a network (10.0.0.0/8), an address (10.1.2.3), a host name (api-0.internal) or a domain (*.api.internal)`,
	} {
		_, err := FromEnv(env(base(v)), "")
		if !errors.Is(err, errs.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", v, err, want)
		}
	}
}

// An inspect server bound beyond loopback without a token is warned about
// at boot; on loopback, or with a token, it is not.
func TestInspectBeyondLoopbackWithoutTokenWarns(t *testing.T) {
	for _, c := range []struct {
		addr, token string
		warn        bool
	}{
		{"0.0.0.0:9464", "", true},
		{"10.1.2.3:9464", "", true},
		{"0.0.0.0:9464", "tok-0123456789abcdef", false},
		{"127.0.0.1:9464", "", false},
		{"localhost:9464", "", false},
		{"", "", false},
	} {
		cfg, err := FromEnv(env(map[string]string{"DB_URL": "memory:", "VOLTRO_INSPECT_ADDR": c.addr, "VOLTRO_INSPECT_TOKEN": c.token}), "")
		if err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(strings.Join(cfg.Warnings, "\n"), "beyond loopback without VOLTRO_INSPECT_TOKEN")
		if warned != c.warn {
			t.Errorf("%q, token %q: warned %v, want %v (%q)", c.addr, c.token, warned, c.warn, cfg.Warnings)
		}
	}
}
