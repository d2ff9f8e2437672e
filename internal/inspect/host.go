package inspect

// What the inspect server and voltro dashboard answer before any route:
// the Host check that keeps a page of another site from reading them
// through DNS rebinding, and the headers every answer carries.

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/voltro/voltro/internal/inspectclient"
)

// HostCheck decides which Host headers a server answers. With a token
// set, every Host: the token is what guards the reads, and a browser page
// on another site does not have it. Without one, only hosts a page of
// another site cannot point at this server by DNS rebinding (its own name
// made to resolve to this machine): an IP address, localhost and names
// under .localhost (which browsers resolve to loopback themselves), the
// host the server was told to listen on, and the names and domains of
// VOLTRO_INSPECT_TRUSTED_HOSTS.
type HostCheck struct {
	Token  string
	Trust  inspectclient.Trust
	Listen string // the listen address as configured (VOLTRO_INSPECT_ADDR, --addr)
}

// Allows reports whether a request with Host host (with or without a
// port) is answered in full.
func (c HostCheck) Allows(host string) bool {
	if c.Token != "" {
		return true
	}
	name := hostOnly(host)
	if name == "" {
		return true // HTTP/1.0 without Host: not a browser
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	if own := hostOnly(c.Listen); own != "" && own == name {
		return true
	}
	// A name (not localhost, handled above): matched against the listed
	// names and domains, never resolved.
	ok, _ := c.Trust.Allows(context.Background(), name)
	return ok
}

// hostOnly is host without its port and brackets, lower case, without a
// trailing dot.
func hostOnly(host string) string {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

type limited struct{}

// Limited reports whether r was let through by Wrap with a Host it does not
// answer in full: a liveness or readiness route then answers with its
// verdict only.
func Limited(r *http.Request) bool {
	v, _ := r.Context().Value(limited{}).(bool)
	return v
}

// Wrap serves next behind the Host check, with the headers every answer
// carries (no MIME sniffing, no referrer). A request with another Host is
// answered 421 Misdirected Request, except a GET or HEAD of a path in
// verdicts, which goes on marked Limited.
func (c HostCheck) Wrap(next http.Handler, verdicts ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		if c.Allows(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		for _, p := range verdicts {
			if r.URL.Path == p && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), limited{}, true)))
				return
			}
		}
		w.Header().Set("Connection", "close")
		http.Error(w, "misdirected request: this server answers Host "+quoteHost(r.Host)+" only with VOLTRO_INSPECT_TOKEN set; "+
			"without a token it answers IP addresses, localhost, the host it listens on and the names of "+inspectclient.EnvTrustedHosts, http.StatusMisdirectedRequest)
	})
}

func quoteHost(h string) string {
	if len(h) > 100 {
		h = h[:100] + "…"
	}
	return "\"" + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return '?'
		}
		return r
	}, h) + "\""
}
