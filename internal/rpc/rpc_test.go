package rpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testServer serves h on a loopback listener with the bounded http.Server;
// it returns the address (also the server's Self).
func testServer(t *testing.T, h Handlers, o ServerOptions) (string, *Server) {
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
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return o.Self, s
}

// recorder is a set of handlers that record what they were asked.
type recorder struct {
	mu       sync.Mutex
	woke     []string
	replies  []int64
	volatile []VolatileRequest
}

func (r *recorder) handlers() Handlers {
	return Handlers{
		Wake: func(s []string) bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.woke = append(r.woke, s...)
			return len(s) == 0 || !strings.HasPrefix(s[0], "unheld/")
		},
		Reply: func(id int64) {
			r.mu.Lock()
			r.replies = append(r.replies, id)
			r.mu.Unlock()
		},
		Volatile: func(_ context.Context, v VolatileRequest) ([]byte, error) {
			r.mu.Lock()
			r.volatile = append(r.volatile, v)
			r.mu.Unlock()
			if v.EntityID == "bad" {
				return nil, errs.New(errs.CodeNotOwner, "not mine")
			}
			return append([]byte("echo:"), v.Payload...), nil
		},
	}
}

func (r *recorder) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.woke) + len(r.replies) + len(r.volatile)
}

func vol(id string) VolatileRequest {
	return VolatileRequest{Shard: "default/1", EntityType: "payments", EntityID: id, Payload: []byte(`{"amount":999999}`)}
}

func TestSignedCallsAndRefusals(t *testing.T) {
	var rec recorder
	var refused atomic.Int64
	addr, _ := testServer(t, rec.handlers(), ServerOptions{Secrets: []string{"s3cret-0123456789"}, Refused: func() { refused.Add(1) }})
	ctx := context.Background()

	c := NewClient("s3cret-0123456789", "me:1")
	if err := c.Ping(ctx, addr); err != nil {
		t.Fatal(err)
	}
	if err := c.Wake(ctx, addr, []string{"default/1", "default/2"}); err != nil {
		t.Fatal(err)
	}
	// A wake-up for shards the receiver does not hold says so: the sender
	// then looks for the holder.
	if err := c.Wake(ctx, addr, []string{"unheld/1"}); !errors.Is(err, errs.ErrNotOwner) {
		t.Fatalf("wake for a shard not held: %v", err)
	}
	got, err := c.Volatile(ctx, addr, vol("x"))
	if err != nil || string(got) != `echo:{"amount":999999}` {
		t.Fatalf("volatile: %q %v", got, err)
	}
	if _, err := c.Volatile(ctx, addr, vol("bad")); !errors.Is(err, errs.ErrNotOwner) {
		t.Fatalf("remote error code lost: %v", err)
	}
	before := rec.calls()

	// Forged: a wrong secret, the old derivable secret, no signature.
	for _, secret := range []string{"other-0123456789", "derived:postgres:app", ""} {
		if _, err := NewClient(secret, "me:1").Volatile(ctx, addr, vol("forged")); !errors.Is(err, errs.ErrUnauthenticated) {
			t.Fatalf("secret %q: %v", secret, err)
		}
	}
	for _, path := range []string{PathWake, PathVolatile, PathReply, PathPing} {
		resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(`{"shards":["x"]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unsigned %s: %d", path, resp.StatusCode)
		}
	}
	// Aimed at another runner: refused although correctly signed.
	req := signedRequest(t, "s3cret-0123456789", "10.9.9.9:34000", addr, PathVolatile, []byte(`{"shard":"default/1","entityType":"payments","entityId":"t","payload":null}`))
	if code := do(t, req); code != http.StatusUnauthorized {
		t.Fatalf("wrong target: %d", code)
	}
	// A body that is not the one signed.
	req = signedRequest(t, "s3cret-0123456789", addr, addr, PathWake, []byte(`{"shards":["a"]}`))
	req.Body = io.NopCloser(strings.NewReader(`{"shards":["b"]}`))
	if code := do(t, req); code != http.StatusUnauthorized {
		t.Fatalf("tampered body: %d", code)
	}
	if rec.calls() != before {
		t.Fatalf("a refused call was executed: %+v", rec.volatile)
	}
	if refused.Load() != 3+4+2 {
		t.Fatalf("refusals counted: %d", refused.Load())
	}
}

// signedRequest builds a call from the given secret aimed at target, sent to addr.
func signedRequest(t *testing.T, secret, target, addr, path string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	setHeaders(req.Header, []byte(secret), http.MethodPost, path, "me:1", target, body, time.Now())
	return req
}

func do(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestReplayRefused(t *testing.T) {
	var rec recorder
	addr, _ := testServer(t, rec.handlers(), ServerOptions{Secrets: []string{"s3cret-0123456789"}})
	body := []byte(`{"shard":"default/1","entityType":"payments","entityId":"p1","payload":"eyJhbW91bnQiOjF9"}`)
	first := signedRequest(t, "s3cret-0123456789", addr, addr, PathVolatile, body)
	if code := do(t, first); code != http.StatusOK {
		t.Fatalf("first call: %d", code)
	}
	for i := 0; i < 3; i++ {
		again, _ := http.NewRequest(http.MethodPost, first.URL.String(), bytes.NewReader(body))
		again.Header = first.Header.Clone()
		if code := do(t, again); code != http.StatusUnauthorized {
			t.Fatalf("replay %d: %d", i, code)
		}
	}
	// A stale timestamp is refused however fresh the nonce.
	stale, _ := http.NewRequest(http.MethodPost, first.URL.String(), bytes.NewReader(body))
	setHeaders(stale.Header, []byte("s3cret-0123456789"), http.MethodPost, PathVolatile, "me:1", addr, body, time.Now().Add(-MaxSkew-time.Second))
	if code := do(t, stale); code != http.StatusUnauthorized {
		t.Fatalf("stale call: %d", code)
	}
	if n := rec.calls(); n != 1 {
		t.Fatalf("the captured call ran %d times", n)
	}
}

// Rotation: a server holding new,old accepts both; clients sign with the
// first of their list; once old is dropped, old-signed calls are refused.
func TestSecretRotation(t *testing.T) {
	var rec recorder
	ctx := context.Background()
	const old, neu = "old-secret-0123456789", "new-secret-0123456789"
	both, _ := testServer(t, rec.handlers(), ServerOptions{Secrets: ParseSecrets(neu + " , " + old)})
	only, _ := testServer(t, rec.handlers(), ServerOptions{Secrets: ParseSecrets(neu)})
	for _, s := range []string{old, neu} {
		if err := NewClient(ParseSecrets(s + "," + old)[0], "me:1").Ping(ctx, both); err != nil {
			t.Fatalf("mid-rotation server refused %s: %v", s, err)
		}
	}
	if err := NewClient(neu, "me:1").Ping(ctx, only); err != nil {
		t.Fatal(err)
	}
	if err := NewClient(old, "me:1").Ping(ctx, only); !errors.Is(err, errs.ErrUnauthenticated) {
		t.Fatalf("retired secret accepted: %v", err)
	}
}

func TestOversizedBodyRefusedUnread(t *testing.T) {
	var rec recorder
	addr, _ := testServer(t, rec.handlers(), ServerOptions{Secrets: []string{"s3cret-0123456789"}, MaxBody: 4096})
	big := VolatileRequest{Shard: "default/1", EntityType: "payments", EntityID: "x", Payload: bytes.Repeat([]byte("a"), 8192)}
	_, err := NewClient("s3cret-0123456789", "me:1").Volatile(context.Background(), addr, big)
	if err == nil || !strings.Contains(err.Error(), "VOLTRO_RPC_MAX_BODY") {
		t.Fatalf("oversized body: %v", err)
	}
	// Without a Content-Length (chunked), the cap holds while reading.
	body := bytes.Repeat([]byte("a"), 8192)
	req := signedRequest(t, "s3cret-0123456789", addr, addr, PathWake, body)
	req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body)))
	req.ContentLength = -1
	if code := do(t, req); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked oversized body: %d", code)
	}
	if rec.calls() != 0 {
		t.Fatal("an oversized call ran")
	}
}

func TestPerPeerLimit(t *testing.T) {
	release := make(chan struct{})
	var running atomic.Int64
	h := Handlers{Volatile: func(ctx context.Context, _ VolatileRequest) ([]byte, error) {
		running.Add(1)
		<-release
		return nil, nil
	}}
	addr, _ := testServer(t, h, ServerOptions{Secrets: []string{"s3cret-0123456789"}, PerPeer: 2})
	c := NewClient("s3cret-0123456789", "me:1")
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = c.Volatile(context.Background(), addr, vol("x")) }()
	}
	for running.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Post("http://"+addr+PathPing, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third concurrent call from one peer: %d", resp.StatusCode)
	}
	// A client is told that nothing ran, apart from other failures.
	if err := c.Ping(context.Background(), addr); !errors.Is(err, ErrBusy) || !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("a refused call's error: %v", err)
	}
	close(release)
	wg.Wait()
	if err := c.Ping(context.Background(), addr); err != nil {
		t.Fatalf("after the calls ended: %v", err)
	}
}

// Slow headers, a slow body and an idle keep-alive are all cut off by the
// server's timeouts.
func TestConnectionTimeouts(t *testing.T) {
	addr, _ := testServer(t, (&recorder{}).handlers(), ServerOptions{Secrets: []string{"s3cret-0123456789"},
		ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 600 * time.Millisecond, IdleTimeout: 400 * time.Millisecond})
	closedWithin := func(name string, conn net.Conn, limit time.Duration, drip func()) time.Duration {
		t.Helper()
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = io.Copy(io.Discard, conn) // returns when the server closes
		}()
		stop := make(chan struct{})
		if drip != nil {
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						drip()
					}
				}
			}()
		}
		select {
		case <-done:
		case <-time.After(limit + 2*time.Second):
			t.Fatalf("%s: connection still open after %v", name, time.Since(start))
		}
		close(stop)
		if el := time.Since(start); el > limit+time.Second {
			t.Fatalf("%s: closed after %v, limit %v", name, el, limit)
		}
		conn.Close()
		return time.Since(start)
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	c := dial()
	_, _ = io.WriteString(c, "POST /_voltro/rpc/wake HTTP/1.1\r\nHost: x\r\n")
	closedWithin("slow header", c, 300*time.Millisecond, func() { _, _ = io.WriteString(c, "X-A: b\r\n") })

	c = dial()
	body := []byte(`{"shards":["default/1"]}`)
	h := http.Header{}
	setHeaders(h, []byte("s3cret-0123456789"), http.MethodPost, PathWake, "me:1", addr, body, time.Now())
	var sb strings.Builder
	sb.WriteString("POST /_voltro/rpc/wake HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n")
	for k, v := range h {
		sb.WriteString(k + ": " + v[0] + "\r\n")
	}
	sb.WriteString("\r\n")
	_, _ = io.WriteString(c, sb.String())
	closedWithin("slow body", c, 600*time.Millisecond, func() { _, _ = c.Write([]byte("a")) })

	c = dial()
	h = http.Header{}
	setHeaders(h, []byte("s3cret-0123456789"), http.MethodPost, PathPing, "me:1", addr, nil, time.Now())
	sb.Reset()
	sb.WriteString("POST /_voltro/rpc/ping HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n")
	for k, v := range h {
		sb.WriteString(k + ": " + v[0] + "\r\n")
	}
	sb.WriteString("\r\n")
	_, _ = io.WriteString(c, sb.String()) // answered 204, the connection kept alive, then idle
	if el := closedWithin("idle keep-alive", c, 400*time.Millisecond, nil); el < 300*time.Millisecond {
		t.Fatalf("the signed ping's connection closed after %v, before the idle timeout: not kept alive", el)
	}
}

// The nonce cache is in memory: a call captured before a restart used to be
// accepted once by the new process, inside the 30 s window. A server
// refuses every call signed before it started; a peer whose clock is behind
// is refused, with the skew named, only until its clock passes the start.
func TestReplayAfterRestartRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serve := func(ln net.Listener, rec *recorder, refused *atomic.Int64) *http.Server {
		s := NewServer(rec.handlers(), ServerOptions{Self: addr, Secrets: []string{"s3cret-0123456789"}, Logger: quiet, Refused: func() { refused.Add(1) }})
		hs := s.HTTPServer()
		go func() { _ = hs.Serve(ln) }()
		return hs
	}
	var before, after recorder
	var refused atomic.Int64
	first := serve(ln, &before, &refused)
	body := []byte(`{"shard":"default/1","entityType":"payments","entityId":"p1","payload":"eyJhbW91bnQiOjF9"}`)
	captured := signedRequest(t, "s3cret-0123456789", addr, addr, PathVolatile, body)
	if code := do(t, captured); code != http.StatusOK || before.calls() != 1 {
		t.Fatalf("the original call: %d, %d calls", code, before.calls())
	}
	_ = first.Close()

	// The restart: a new process, the same address and secret, an empty
	// nonce cache. (A real restart takes far longer than these 5 ms.)
	time.Sleep(5 * time.Millisecond)
	var ln2 net.Listener
	for i := 0; ; i++ {
		if ln2, err = net.Listen("tcp", addr); err == nil {
			break
		}
		if i == 50 {
			t.Fatalf("listening again on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	second := serve(ln2, &after, &refused)
	t.Cleanup(func() { _ = second.Close() })
	restarted := time.Now()

	replay, _ := http.NewRequest(http.MethodPost, captured.URL.String(), bytes.NewReader(body))
	replay.Header = captured.Header.Clone()
	resp, err := http.DefaultClient.Do(replay)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(msg), "before this runner started") {
		t.Fatalf("the replay after the restart: %d %s", resp.StatusCode, msg)
	}
	if after.calls() != 0 || refused.Load() != 1 {
		t.Fatalf("the replay ran (%d calls) or was not counted (%d)", after.calls(), refused.Load())
	}

	// A peer 2 s behind: refused, and its caller is told why.
	skewed := signedRequest(t, "s3cret-0123456789", addr, addr, PathWake, []byte(`{"shards":["a"]}`))
	setHeaders(skewed.Header, []byte("s3cret-0123456789"), http.MethodPost, PathWake, "me:1", addr, []byte(`{"shards":["a"]}`), restarted.Add(-2*time.Second))
	if code := do(t, skewed); code != http.StatusServiceUnavailable {
		t.Fatalf("a call signed 2 s before the start: %d", code)
	}
	c := NewClient("s3cret-0123456789", "me:1")
	if err := c.Ping(context.Background(), addr); err != nil {
		t.Fatalf("a fresh call after the restart: %v", err)
	}
	if _, err := c.Volatile(context.Background(), addr, vol("x")); err != nil || after.calls() != 1 {
		t.Fatalf("a fresh volatile after the restart: %v (%d calls)", err, after.calls())
	}
}

// A client flooding the plain runner port with refused calls, each with a
// 12 KB path and a 2 KB claimed sender (near the 16 KB header cap), costs a few log lines of bounded
// size per window: the first ones one by one, the rest counted in one
// line. Every refusal is still counted.
func TestCallRefusalsAreAggregatedAndCapped(t *testing.T) {
	var logs logBuf
	var refused atomic.Int64
	r := &recorder{}
	addr, s := testServer(t, r.handlers(), ServerOptions{Secrets: []string{"k"}, Logger: logs.logger(), Refused: func() { refused.Add(1) }})
	s.callLog.every = time.Hour // one window, ended by hand below
	long := strings.Repeat("A", 12<<10)
	client := &http.Client{}
	const n = 200
	for i := 0; i < n; i++ {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/_voltro/rpc/"+long, strings.NewReader("{}"))
		req.Header.Set(headerFrom, long[:2<<10])
		req.Header.Set(headerSig, "forged")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	s.callLog.flush()
	one, sum := logs.warns("refused a call"), logs.warns("more calls")
	if len(one) != refusalLogBurst || len(sum) != 1 || !strings.Contains(sum[0], "count="+strconv.Itoa(n-refusalLogBurst)) {
		t.Fatalf("want %d single lines and a count of the other %d:\n%s\n%s", refusalLogBurst, n-refusalLogBurst, strings.Join(one, "\n"), sum[0])
	}
	logs.mu.Lock()
	size := logs.b.Len()
	logs.mu.Unlock()
	if size > 4<<10 {
		t.Fatalf("%d calls wrote %d bytes of log", n, size)
	}
	if refused.Load() != n || r.calls() != 0 {
		t.Fatalf("refusals counted %d, want %d; calls served %d", refused.Load(), n, r.calls())
	}
}
