package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/testwait"
	"github.com/voltro/voltro/internal/tlstest"
)

const tlsSecret = "s3cret-0123456789"

// logBuf is a log that tests read back.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// warns are the Warn lines containing substr.
func (l *logBuf) warns(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

// tlsServer serves h over TLS on loopback, as the engine does (the
// handshaking listener under the bounded http.Server).
func tlsServer(t *testing.T, h Handlers, o ServerOptions) (string, *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Self = ln.Addr().String()
	if o.Logger == nil {
		o.Logger = quiet
	}
	s := NewServer(h, o)
	hs := s.HTTPServer()
	go func() { _ = hs.Serve(s.Listener(ln)) }()
	t.Cleanup(func() { _ = hs.Close() })
	return o.Self, s
}

// pki is a CA, the runner certificates it issued for 127.0.0.1, and the
// TLS setups built of them.
type pki struct {
	ca             *tlstest.CA
	server, client tlstest.Leaf
}

func newPKI(t *testing.T, name string) pki {
	ca := tlstest.NewCA(t, name)
	return pki{ca: ca, server: ca.Issue(t, "127.0.0.1"), client: ca.Issue(t, "127.0.0.1")}
}

// mutual is mutual TLS with leaf against the CA.
func (p pki) mutual(t *testing.T, leaf tlstest.Leaf) *TLS {
	return newStaticTLS(leaf.TLS(t), p.ca.Pool(), p.ca.Pool(), "")
}

func TestTLSRoundtrip(t *testing.T) {
	p := newPKI(t, "roundtrip CA")
	var rec recorder
	// TLS without a CA setting: no client certificate asked; the client
	// verifies the server (here against the test CA, in production the
	// system roots).
	addr, _ := tlsServer(t, rec.handlers(), ServerOptions{Secrets: []string{tlsSecret}, TLS: newStaticTLS(p.server.TLS(t), nil, nil, "")})
	c := NewClientWith(ClientOptions{Secret: tlsSecret, From: "me:1", TLS: newStaticTLS(p.client.TLS(t), p.ca.Pool(), nil, ""), Logger: quiet})
	ctx := context.Background()
	if err := c.Ping(ctx, addr); err != nil {
		t.Fatal(err)
	}
	if err := c.Wake(ctx, addr, []string{"default/1"}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Volatile(ctx, addr, vol("x")); err != nil || string(got) != `echo:{"amount":999999}` {
		t.Fatalf("volatile over TLS: %q %v", got, err)
	}
	if rec.calls() != 2 {
		t.Fatalf("calls executed: %d", rec.calls())
	}
	// TLS 1.3 is preferred, 1.2 the least accepted.
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	if v := conn.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Fatalf("negotiated %x, want TLS 1.3", v)
	}
	conn.Close()
	if _, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.ca.Pool(), MaxVersion: tls.VersionTLS11}); err == nil {
		t.Fatal("TLS 1.1 accepted")
	}
	conn, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: p.ca.Pool(), MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS 1.2: %v", err)
	}
	conn.Close()
}

func TestMutualTLSRoundtrip(t *testing.T) {
	p := newPKI(t, "mutual CA")
	var rec recorder
	var refused atomic.Int64
	addr, _ := tlsServer(t, rec.handlers(), ServerOptions{Secrets: []string{tlsSecret}, TLS: p.mutual(t, p.server), Refused: func() { refused.Add(1) }})
	c := NewClientWith(ClientOptions{Secret: tlsSecret, From: "me:1", TLS: p.mutual(t, p.client), Logger: quiet})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if got, err := c.Volatile(ctx, addr, vol("x")); err != nil || string(got) != `echo:{"amount":999999}` {
			t.Fatalf("volatile over mutual TLS: %q %v", got, err)
		}
	}
	if err := c.PushReply(ctx, addr, 7); err != nil {
		t.Fatal(err)
	}
	if rec.calls() != 4 || refused.Load() != 0 {
		t.Fatalf("calls %d, refusals %d", rec.calls(), refused.Load())
	}
	// The signature is still required under mutual TLS.
	bad := NewClientWith(ClientOptions{Secret: "other-0123456789", From: "me:1", TLS: p.mutual(t, p.client), Logger: quiet})
	if err := bad.Ping(ctx, addr); !errors.Is(err, errs.ErrUnauthenticated) {
		t.Fatalf("a certified peer with the wrong secret: %v", err)
	}
}

// A client with no certificate, and one with a certificate of another CA:
// refused at the handshake, nothing executed, the reason in the log.
func TestMutualTLSRefusesUncertifiedClients(t *testing.T) {
	p := newPKI(t, "cluster CA")
	other := newPKI(t, "other CA")
	var rec recorder
	var refused atomic.Int64
	var logs logBuf
	addr, _ := tlsServer(t, rec.handlers(), ServerOptions{Secrets: []string{tlsSecret}, TLS: p.mutual(t, p.server), Refused: func() { refused.Add(1) }, Logger: logs.logger()})
	ctx := context.Background()
	for name, tc := range map[string]struct {
		tls    *TLS
		reason string
	}{
		// trusts the cluster CA, presents nothing
		"no certificate": {newStaticTLS(tls.Certificate{}, p.ca.Pool(), nil, ""), "no client certificate"},
		// trusts the cluster CA, presents a certificate of another
		"another CA": {newStaticTLS(other.client.TLS(t), p.ca.Pool(), other.ca.Pool(), ""), "client certificate not trusted"},
	} {
		before := refused.Load()
		c := NewClientWith(ClientOptions{Secret: tlsSecret, From: "me:1", TLS: tc.tls, Logger: quiet})
		_, err := c.Volatile(ctx, addr, vol("x"))
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if !errors.Is(err, errs.ErrUnauthenticated) || !strings.Contains(err.Error(), "refused the TLS handshake") {
			t.Errorf("%s: the caller's error does not say the handshake was refused: %v", name, err)
		}
		testwait.For(t, 5*time.Second, name+" logged", func() bool { return len(logs.warns(tc.reason)) == 1 })
		if refused.Load() != before+1 {
			t.Errorf("%s: refusals counted %d, want %d", name, refused.Load(), before+1)
		}
	}
	// A bare TLS client without a certificate, straight from net/http.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.ca.Pool()}}}
	if resp, err := hc.Post("https://"+addr+PathPing, "application/json", nil); err == nil {
		resp.Body.Close()
		t.Fatalf("a client without a certificate got an answer: %s", resp.Status)
	}
	if n := rec.calls(); n != 0 {
		t.Fatalf("a refused client executed %d calls", n)
	}
}

// A plain HTTP call to a TLS port is refused at the handshake, answered
// with words the plain client turns into a clear error.
func TestPlaintextCallToTLSPortRefused(t *testing.T) {
	p := newPKI(t, "plain CA")
	var rec recorder
	var logs logBuf
	addr, _ := tlsServer(t, rec.handlers(), ServerOptions{Secrets: []string{tlsSecret}, TLS: p.mutual(t, p.server), Logger: logs.logger()})
	var clientLogs logBuf
	c := NewClientWith(ClientOptions{Secret: tlsSecret, From: "me:1", Logger: clientLogs.logger()})
	_, err := c.Volatile(context.Background(), addr, vol("x"))
	if !errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "speaks TLS") || !strings.Contains(err.Error(), EnvTLSCert) {
		t.Fatalf("plain client to a TLS port: %v", err)
	}
	if len(clientLogs.warns("TLS settings")) != 1 {
		t.Fatalf("the mismatch is not in the caller's log: %s", clientLogs.b.String())
	}
	resp, err := http.Post("http://"+addr+PathPing, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), PlaintextRefusal) {
		t.Fatalf("plain HTTP to the TLS port: %d %s", resp.StatusCode, body)
	}
	testwait.For(t, 5*time.Second, "both refusals logged", func() bool { return len(logs.warns("not TLS")) == 2 })
	if rec.calls() != 0 {
		t.Fatal("a plain call was executed")
	}
}

// A TLS client calling a plain runner port fails with an error naming the
// settings, logged once per peer however many calls fail.
func TestTLSClientToPlainPortFailsClearly(t *testing.T) {
	p := newPKI(t, "client CA")
	var rec recorder
	addr, _ := testServer(t, rec.handlers(), ServerOptions{Secrets: []string{tlsSecret}})
	var logs logBuf
	c := NewClientWith(ClientOptions{Secret: tlsSecret, From: "me:1", TLS: p.mutual(t, p.client), Logger: logs.logger()})
	for i := 0; i < 3; i++ {
		err := c.Wake(context.Background(), addr, []string{"default/1"})
		if !errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "does not speak TLS") || !strings.Contains(err.Error(), EnvTLSCert) {
			t.Fatalf("TLS client to a plain port: %v", err)
		}
	}
	if n := len(logs.warns("does not speak TLS")); n != 1 {
		t.Fatalf("the mismatch logged %d times for one peer, want 1: %s", n, logs.b.String())
	}
	if rec.calls() != 0 {
		t.Fatal("executed")
	}
}

// Hostname verification: the address's host must be in the server's SANs,
// unless VOLTRO_RUNNER_TLS_SERVER_NAME names the one name to require.
func TestServerNameVerification(t *testing.T) {
	ca := tlstest.NewCA(t, "names CA")
	named := ca.Issue(t, "runner.voltro.internal") // no IP SAN
	var rec recorder
	addr, _ := tlsServer(t, rec.handlers(), ServerOptions{Secrets: []string{tlsSecret}, TLS: newStaticTLS(named.TLS(t), ca.Pool(), ca.Pool(), "runner.voltro.internal")})
	ctx := context.Background()
	byAddr := NewClientWith(ClientOptions{Secret: tlsSecret, From: "me:1", TLS: newStaticTLS(named.TLS(t), ca.Pool(), ca.Pool(), ""), Logger: quiet})
	err := byAddr.Ping(ctx, addr)
	if !errors.Is(err, errs.ErrUnauthenticated) || !strings.Contains(err.Error(), "cannot verify the TLS certificate") || !strings.Contains(err.Error(), EnvTLSServerName) {
		t.Fatalf("a certificate without the dialled IP: %v", err)
	}
	byName := NewClientWith(ClientOptions{Secret: tlsSecret, From: "me:1", TLS: newStaticTLS(named.TLS(t), ca.Pool(), ca.Pool(), "runner.voltro.internal"), Logger: quiet})
	if err := byName.Ping(ctx, addr); err != nil {
		t.Fatalf("with the server name set: %v", err)
	}
	wrongName := NewClientWith(ClientOptions{Secret: tlsSecret, From: "me:1", TLS: newStaticTLS(named.TLS(t), ca.Pool(), ca.Pool(), "other.voltro.internal"), Logger: quiet})
	if err := wrongName.Ping(ctx, addr); !errors.Is(err, errs.ErrUnauthenticated) {
		t.Fatalf("another server name: %v", err)
	}
}

// A flood of refused handshakes costs a few log lines: the first ones one
// by one, the rest counted in one line per window. A TCP probe that closes
// without a word is neither logged at Warn nor counted.
func TestHandshakeRefusalsAreAggregated(t *testing.T) {
	p := newPKI(t, "flood CA")
	var logs logBuf
	var refused atomic.Int64
	addr, s := tlsServer(t, Handlers{}, ServerOptions{Secrets: []string{tlsSecret}, TLS: p.mutual(t, p.server), Logger: logs.logger(), Refused: func() { refused.Add(1) }})
	s.hsLog.every = 500 * time.Millisecond
	const n = 60
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "POST /_voltro/rpc/wake HTTP/1.1\r\nHost: x\r\n\r\n")
		_, _ = io.Copy(io.Discard, c)
		c.Close()
	}
	for i := 0; i < 5; i++ { // probes
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	testwait.For(t, 5*time.Second, "the summary line", func() bool { return len(logs.warns("more TLS handshakes")) == 1 })
	one, sum := logs.warns("refused a TLS handshake"), logs.warns("more TLS handshakes")
	if len(one) != refusalLogBurst || !strings.Contains(sum[0], "count=55") {
		t.Fatalf("want %d single lines and a count of the other %d:\n%s\n%s", refusalLogBurst, n-refusalLogBurst, strings.Join(one, "\n"), sum[0])
	}
	time.Sleep(200 * time.Millisecond)
	if refused.Load() != n {
		t.Fatalf("refusals counted %d, want %d (probes are not refusals)", refused.Load(), n)
	}
	// A new window logs the first refusals one by one again.
	time.Sleep(s.hsLog.every)
	if resp, err := http.Post("http://"+addr+PathPing, "application/json", nil); err == nil {
		resp.Body.Close()
	}
	testwait.For(t, 5*time.Second, "a refusal in a new window", func() bool { return len(logs.warns("refused a TLS handshake")) == refusalLogBurst+1 })
}

// The files are read again when they change: a renewed certificate is
// served without a restart; files that do not load leave the last good
// certificate in use.
func TestTLSFilesReload(t *testing.T) {
	p := newPKI(t, "reload CA")
	dir := t.TempDir()
	f := p.server.WriteFiles(t, dir, p.ca)
	srvTLS, err := LoadTLS(TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA})
	if err != nil {
		t.Fatal(err)
	}
	srvTLS.reloadEvery = 0
	if err := srvTLS.Check("127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	var logs logBuf
	addr, _ := tlsServer(t, (&recorder{}).handlers(), ServerOptions{Secrets: []string{tlsSecret}, TLS: srvTLS, Logger: logs.logger()})
	served := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.ca.Pool(), Certificates: []tls.Certificate{p.client.TLS(t)}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	if got := served(); got != p.server.Cert.SerialNumber.String() {
		t.Fatalf("served %s", got)
	}
	renewed := p.ca.Issue(t, "127.0.0.1")
	touch := func(path string, b []byte, at time.Time) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	later := time.Now().Add(time.Minute)
	touch(f.Cert, renewed.CertPEM, later)
	touch(f.Key, renewed.KeyPEM, later)
	if got := served(); got != renewed.Cert.SerialNumber.String() {
		t.Fatalf("after renewal served %s, want %s", got, renewed.Cert.SerialNumber)
	}
	touch(f.Key, []byte("not a key"), later.Add(time.Minute))
	if got := served(); got != renewed.Cert.SerialNumber.String() {
		t.Fatalf("after a broken key served %s", got)
	}
	// A certificate for another host would be refused by every peer: the
	// boot check applies to a reload too.
	elsewhere := p.ca.Issue(t, "10.9.9.9")
	touch(f.Cert, elsewhere.CertPEM, later.Add(2*time.Minute))
	touch(f.Key, elsewhere.KeyPEM, later.Add(2*time.Minute))
	if got := served(); got != renewed.Cert.SerialNumber.String() {
		t.Fatalf("after a certificate for another host served %s", got)
	}
	if n := len(logs.warns("do not load or do not verify")); n != 2 {
		t.Fatalf("%d failed reloads logged, want 2: %s", n, logs.b.String())
	}
}
