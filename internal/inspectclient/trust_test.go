package inspectclient

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestTrustDefaultIsLoopbackOnly(t *testing.T) {
	ctx := context.Background()
	var def Trust
	def.lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, nil
	}
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.2": true, "127.255.255.254": true, "::1": true, "::ffff:127.0.0.1": true,
		"0.0.0.0": true, "::": true, "": true, "localhost": true, "LocalHost.": true,
		"10.1.2.3": false, "192.168.0.1": false, "::2": false, "fe80::1": false, "::ffff:10.1.2.3": false,
		"128.0.0.1": false, "vm": false, "localhost.evil.example": false, "evil-localhost": false, "127.0.0.1.nip.io": false,
	} {
		ok, why := def.Allows(ctx, host)
		if ok != want {
			t.Errorf("default trust of %q: %v, want %v (%s)", host, ok, want, why)
		}
		if !ok && (!strings.Contains(why, "not a trusted inspect host") || !strings.Contains(why, EnvTrustedHosts)) {
			t.Errorf("untrusted %q: the reason does not name the variable: %s", host, why)
		}
	}
}

func TestTrustLocalhostMustResolveToLoopback(t *testing.T) {
	ctx := context.Background()
	t1 := Trust{lookup: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.5")}, nil
	}}
	if ok, why := t1.Allows(ctx, "localhost"); ok || !strings.Contains(why, "localhost resolves to 10.0.0.5, which is not loopback") {
		t.Fatalf("localhost resolving off the machine: %v %s", ok, why)
	}
	t2 := Trust{lookup: func(context.Context, string) ([]netip.Addr, error) { return nil, errors.New("no such host") }}
	if ok, why := t2.Allows(ctx, "localhost"); ok || !strings.Contains(why, "does not resolve") {
		t.Fatalf("localhost not resolving: %v %s", ok, why)
	}
	// the real resolver: localhost is loopback on any sane machine
	if ok, why := (Trust{}).Allows(ctx, "localhost"); !ok {
		t.Fatalf("localhost on this machine: %s", why)
	}
}

func TestTrustWidened(t *testing.T) {
	ctx := context.Background()
	tr, err := ParseTrust(" 10.0.0.0/8, fd00::/8 ,192.168.1.7, [fd12::7], api-0.internal, *.pods.svc.cluster.local., ::ffff:172.16.0.0/108")
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"127.0.0.1": true, "localhost": true,
		"10.0.0.1": true, "10.255.255.255": true, "11.0.0.1": false, "::ffff:10.9.9.9": true,
		"fd00::1": true, "fe00::1": false, "fd12::7": true,
		"192.168.1.7": true, "192.168.1.8": false,
		"172.16.1.1": true, "172.32.0.1": false,
		"api-0.internal": true, "API-0.Internal.": true, "api-1.internal": false, "x.api-0.internal": false,
		"a.pods.svc.cluster.local": true, "a.b.pods.svc.cluster.local": true, "pods.svc.cluster.local": false,
		"evilpods.svc.cluster.local": false, "a.pods.svc.cluster.local.evil": false,
	} {
		if ok, why := tr.Allows(ctx, host); ok != want {
			t.Errorf("%q: %v, want %v (%s)", host, ok, want, why)
		}
	}
	// a network covers addresses written as IPs; a name is never resolved
	// to be matched against one
	if ok, _ := tr.Allows(ctx, "vm"); ok {
		t.Error("a name matched a network")
	}
}

func TestOnlyTrustLeavesLoopbackOut(t *testing.T) {
	ctx := context.Background()
	tr, err := OnlyTrust("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"127.0.0.1": true, "127.0.0.2": false, "::1": false, "localhost": false, "": false, "0.0.0.0": false} {
		if ok, _ := tr.Allows(ctx, host); ok != want {
			t.Errorf("%q: %v, want %v", host, ok, want)
		}
	}
}

func TestParseTrustErrors(t *testing.T) {
	for raw, want := range map[string]string{
		"10.0.0.0/8,":             "an entry is empty",
		",":                       "an entry is empty",
		"a,,b":                    "an entry is empty",
		"10.0.0.0/33":             `"10.0.0.0/33" is not a network: write it as address/bits`,
		"10.1.2.3/8":              `"10.1.2.3/8" has address bits set past /8: write 10.0.0.0/8`,
		"fd00::1/8":               "write fd00::/8",
		"10.0.0.1:9464":           `"10.0.0.1:9464" names a port`,
		"[fd00::1]:9464":          "names a port",
		"api.internal:9464":       `"api.internal:9464" names a port`,
		"http://api.internal":     `"http://api.internal" is a URL: list the host alone`,
		"*":                       "would trust every host name",
		"10.0.0.256":              `"10.0.0.256" is not a network (10.0.0.0/8), an address (10.1.2.3), a host name (api-0.internal) or a domain (*.api.internal)`,
		"api internal":            `"api internal" is not a network`,
		"-api.internal":           "is not a network",
		"api..internal":           "is not a network",
		"*.":                      "would trust every host name",
		"a.*.internal":            "is not a network",
		"fe80::1%eth0":            "has an IPv6 zone",
		"user@api.internal":       "is not a network",
		strings.Repeat("a", 64):   "is not a network",
		"10.0.0.0/8, api_x.local": "",
	} {
		_, err := ParseTrust(raw)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: got %v, want an error with %q", raw, err, want)
		}
	}
	if tr, err := ParseTrust("  "); err != nil || tr.only || len(tr.nets)+len(tr.names)+len(tr.domains) != 0 {
		t.Errorf("blank: %+v %v", tr, err)
	}
}
