package inspectclient

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// EnvTrustedHosts widens the hosts the inspect token is sent to.
const EnvTrustedHosts = "VOLTRO_INSPECT_TRUSTED_HOSTS"

// Trust is the set of hosts the inspect token may be sent to. The zero
// Trust is the default: loopback only (127.0.0.0/8, ::1, the unspecified
// addresses 0.0.0.0 and :: and an empty host, which dial this machine, and
// localhost when it resolves to loopback only).
type Trust struct {
	nets    []netip.Prefix // trusted besides loopback
	names   []string       // host names, lower case, without a trailing dot
	domains []string       // *.example.internal kept as example.internal
	// only: the default loopback set is not trusted (OnlyTrust, tests).
	only bool
	// lookup resolves localhost; nil is net.DefaultResolver.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// ParseTrust reads the value of VOLTRO_INSPECT_TRUSTED_HOSTS: networks
// (10.0.0.0/8, fd00::/8), addresses (10.1.2.3), host names (api-0.internal)
// and domains (*.api.svc.cluster.local: every name under it), separated by
// commas, trusted besides loopback. "" is the default, loopback only. A name
// is matched as written in the address, never resolved: a network covers
// only addresses written as IPs.
func ParseTrust(raw string) (Trust, error) {
	var t Trust
	if strings.TrimSpace(raw) == "" {
		return t, nil
	}
	for _, e := range strings.Split(raw, ",") {
		if err := t.add(strings.TrimSpace(e)); err != nil {
			return Trust{}, err
		}
	}
	return t, nil
}

// OnlyTrust trusts exactly entries (as ParseTrust reads them), and not
// loopback: for tests, which can then bind an untrusted listener on this
// machine.
func OnlyTrust(entries ...string) (Trust, error) {
	t := Trust{only: true}
	for _, e := range entries {
		if err := t.add(strings.TrimSpace(e)); err != nil {
			return Trust{}, err
		}
	}
	return t, nil
}

func (t *Trust) add(e string) error {
	const kinds = "a network (10.0.0.0/8), an address (10.1.2.3), a host name (api-0.internal) or a domain (*.api.internal)"
	switch {
	case e == "":
		return fmt.Errorf("an entry is empty: list networks, addresses or host names separated by commas (e.g. 10.0.0.0/8,api.internal), or unset it to trust loopback only")
	case strings.Contains(e, "://"):
		return fmt.Errorf("%q is a URL: list the host alone (e.g. api-0.internal or 10.1.2.3)", e)
	case strings.Contains(e, "/"):
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return fmt.Errorf("%q is not a network: write it as address/bits, e.g. 10.0.0.0/8 or fd00::/8", e)
		}
		if p != p.Masked() {
			return fmt.Errorf("%q has address bits set past /%d: write %s (or the address alone for one host)", e, p.Bits(), p.Masked())
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		t.nets = append(t.nets, p)
		return nil
	}
	bare := e
	if strings.HasPrefix(bare, "[") && strings.HasSuffix(bare, "]") {
		bare = bare[1 : len(bare)-1]
	}
	if a, err := netip.ParseAddr(bare); err == nil {
		if a.Zone() != "" {
			return fmt.Errorf("%q has an IPv6 zone: write the address without %%%s", e, a.Zone())
		}
		a = a.Unmap()
		t.nets = append(t.nets, netip.PrefixFrom(a, a.BitLen()))
		return nil
	}
	if _, err := netip.ParseAddrPort(e); err == nil {
		return fmt.Errorf("%q names a port: list hosts without one (every port of a trusted host is trusted)", e)
	}
	if h, p, err := net.SplitHostPort(e); err == nil && h != "" && p != "" && validName(strings.TrimPrefix(h, "*.")) {
		return fmt.Errorf("%q names a port: list hosts without one (every port of a trusted host is trusted)", e)
	}
	if e == "*" || e == "*." {
		return fmt.Errorf("%q would trust every host name: list the names, or a domain as *.example.internal", e)
	}
	name := strings.TrimSuffix(strings.ToLower(e), ".")
	if d, ok := strings.CutPrefix(name, "*."); ok {
		if !validName(d) {
			return fmt.Errorf("%q is not %s", e, kinds)
		}
		t.domains = append(t.domains, d)
		return nil
	}
	if !validName(name) {
		return fmt.Errorf("%q is not %s", e, kinds)
	}
	t.names = append(t.names, name)
	return nil
}

// validName: a DNS host name (letters, digits, '-' and '_' in labels of 1
// to 63 characters) whose last label is not all digits, so that a mistyped
// address (10.0.0.256) is not taken for a name.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

// Allows reports whether the inspect token may be sent to host (as in a
// URL's Hostname(): no port, no brackets). When it may not, why says so in
// a sentence naming the host and the variable that would allow it.
func (t Trust) Allows(ctx context.Context, host string) (ok bool, why string) {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(name); err == nil {
		a = a.WithZone("").Unmap()
		if !t.only && (a.IsLoopback() || a.IsUnspecified()) {
			return true, ""
		}
		for _, p := range t.nets {
			if p.Contains(a) {
				return true, ""
			}
		}
		return false, untrusted(host)
	}
	if name == "" && !t.only {
		return true, "" // ":port" dials this machine
	}
	for _, n := range t.names {
		if name == n {
			return true, ""
		}
	}
	for _, d := range t.domains {
		if strings.HasSuffix(name, "."+d) {
			return true, ""
		}
	}
	if name == "localhost" && !t.only {
		return t.localhost(ctx, host)
	}
	return false, untrusted(host)
}

// localhost is trusted when every address it resolves to is loopback.
func (t Trust) localhost(ctx context.Context, host string) (bool, string) {
	lookup := t.lookup
	if lookup == nil {
		lookup = func(ctx context.Context, h string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
		}
	}
	addrs, err := lookup(ctx, host)
	if err != nil || len(addrs) == 0 {
		return false, fmt.Sprintf("%s does not resolve here (%v), so it is not known to be loopback; %s", host, err, allowHint)
	}
	for _, a := range addrs {
		if !a.Unmap().IsLoopback() {
			return false, fmt.Sprintf("%s resolves to %s, which is not loopback; %s", host, a, allowHint)
		}
	}
	return true, ""
}

const allowHint = "set " + EnvTrustedHosts + " (networks such as 10.0.0.0/8, or host names, comma-separated) to send VOLTRO_INSPECT_TOKEN there"

func untrusted(host string) string {
	if host == "" {
		host = `""`
	}
	return fmt.Sprintf("%s is not a trusted inspect host; %s", host, allowHint)
}
