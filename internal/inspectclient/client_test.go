package inspectclient_test

// Real listeners record the Authorization header of every request they
// get. Loopback is trusted by default, so these tests trust one loopback
// address (127.0.0.1) and bind the "untrusted" listener on another
// (127.0.0.2): the rule is on the address, and an untrusted host must
// never see the token whatever it is.

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/voltro/voltro/internal/inspectclient"
)

const token = "s3cret-inspect-token"

// recorder is an HTTP listener that keeps the Authorization header of each
// request; handle, when set, answers instead of a plain 200.
type recorder struct {
	addr   string
	mu     sync.Mutex
	auth   []string
	handle http.HandlerFunc
}

func listen(t *testing.T, host string) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	r := &recorder{addr: ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		h := r.handle
		r.mu.Unlock()
		if strings.Contains(req.URL.RawQuery, token) || strings.Contains(req.URL.Path, token) {
			r.mu.Lock()
			r.auth = append(r.auth, "token in the URL: "+req.URL.String())
			r.mu.Unlock()
		}
		if h != nil {
			h(w, req)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

func (r *recorder) sawToken() bool {
	for _, a := range r.seen() {
		if strings.Contains(a, token) {
			return true
		}
	}
	return false
}

func onlyLoopback1(t *testing.T) inspectclient.Trust {
	t.Helper()
	tr, err := inspectclient.OnlyTrust("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func get(t *testing.T, c *inspectclient.Client, addr, path string) (int, string, error) {
	t.Helper()
	resp, withheld, err := c.Get(context.Background(), addr, path)
	if err != nil {
		return 0, withheld, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, withheld, nil
}

func TestTokenGoesOnlyToTrustedHosts(t *testing.T) {
	trusted, untrusted := listen(t, "127.0.0.1"), listen(t, "127.0.0.2")
	c := inspectclient.New(nil, token, onlyLoopback1(t))

	if code, withheld, err := get(t, c, trusted.addr, "/_voltro/inspect/cluster?tail=1"); err != nil || code != 200 || withheld != "" {
		t.Fatalf("trusted: %d %q %v", code, withheld, err)
	}
	if got := trusted.seen(); len(got) != 1 || got[0] != "Bearer "+token {
		t.Fatalf("the trusted listener saw %q", got)
	}

	code, withheld, err := get(t, c, untrusted.addr, "/_voltro/inspect/cluster?tail=1")
	if err != nil || code != 200 {
		t.Fatalf("untrusted: %d %v", code, err)
	}
	if want := "127.0.0.2 is not a trusted inspect host; set " + inspectclient.EnvTrustedHosts; !strings.HasPrefix(withheld, want) {
		t.Fatalf("withheld %q, want it to start with %q", withheld, want)
	}
	if got := untrusted.seen(); len(got) != 1 || got[0] != "" {
		t.Fatalf("the untrusted listener saw %q", got)
	}

	// without a token nothing is withheld, and nothing is sent
	bare := inspectclient.New(nil, "", onlyLoopback1(t))
	if _, withheld, err := get(t, bare, untrusted.addr, "/"); err != nil || withheld != "" {
		t.Fatalf("no token: %q %v", withheld, err)
	}
	if untrusted.sawToken() {
		t.Fatal("the untrusted listener saw the token")
	}
}

func TestRedirectToAnotherHostIsNotFollowed(t *testing.T) {
	trusted, untrusted, sameHost := listen(t, "127.0.0.1"), listen(t, "127.0.0.2"), listen(t, "127.0.0.1")
	// both are trusted by this set: a redirect between hosts is refused
	// even to a trusted one, so the token goes only where it was asked
	tr, err := inspectclient.OnlyTrust("127.0.0.1", "127.0.0.3")
	if err != nil {
		t.Fatal(err)
	}
	trusted.handle = func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/elsewhere":
			http.Redirect(w, r, "http://"+untrusted.addr+"/_voltro/inspect/cluster", http.StatusFound)
		case "/other-port":
			http.Redirect(w, r, "http://"+sameHost.addr+"/x", http.StatusTemporaryRedirect)
		case "/here":
			http.Redirect(w, r, "/there", http.StatusMovedPermanently)
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}
	c := inspectclient.New(&http.Client{}, token, tr)

	_, _, err = get(t, c, trusted.addr, "/elsewhere")
	if err == nil || !strings.Contains(err.Error(), "not followed") || !strings.Contains(err.Error(), untrusted.addr) {
		t.Fatalf("a redirect to another host: %v", err)
	}
	if got := untrusted.seen(); len(got) != 0 {
		t.Fatalf("the redirect target was asked: %q", got)
	}
	if _, _, err := get(t, c, trusted.addr, "/other-port"); err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Fatalf("a redirect to another port: %v", err)
	}
	if got := sameHost.seen(); len(got) != 0 {
		t.Fatalf("the other port was asked: %q", got)
	}

	// a redirect on the same address is followed, with the token
	before := len(trusted.seen())
	if code, _, err := get(t, c, trusted.addr, "/here"); err != nil || code != 200 {
		t.Fatalf("a redirect on the same address: %d %v", code, err)
	}
	if got := trusted.seen()[before:]; len(got) != 2 || got[1] != "Bearer "+token {
		t.Fatalf("after a redirect on the same address the listener saw %q", got)
	}

	// the caller's own redirect policy still applies after ours
	calls := 0
	own := inspectclient.New(&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		calls++
		return http.ErrUseLastResponse
	}}, token, tr)
	if code, _, err := get(t, own, trusted.addr, "/here"); err != nil || code != http.StatusMovedPermanently || calls != 1 {
		t.Fatalf("the caller's policy: %d %v (%d calls)", code, err, calls)
	}
}

func TestAddressMustBeHostPort(t *testing.T) {
	trusted, untrusted := listen(t, "127.0.0.1"), listen(t, "127.0.0.2")
	c := inspectclient.New(nil, token, onlyLoopback1(t))
	// "trusted@untrusted" would dial the part after the @
	for _, addr := range []string{trusted.addr + "@" + untrusted.addr, trusted.addr + "/x?", "user:pw@" + untrusted.addr, untrusted.addr + "#" + trusted.addr, ""} {
		if _, _, err := get(t, c, addr, "/_voltro/inspect/cluster"); err == nil || !strings.Contains(err.Error(), "is not host:port") {
			t.Errorf("%q: %v", addr, err)
		}
	}
	if got := untrusted.seen(); len(got) != 0 {
		t.Fatalf("the untrusted listener was asked: %q", got)
	}
}
