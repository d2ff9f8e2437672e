package rpc

// The client side: signed calls to another runner's advertised address,
// over TLS when the runner port is configured for it.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// tlsWarnEvery: a TLS problem with one peer is logged at Warn at most this
// often (every failed call still returns its error).
const tlsWarnEvery = time.Minute

// ClientOptions configure NewClientWith.
type ClientOptions struct {
	// Secret signs (the first of a rotation list; see ParseSecrets).
	Secret string
	// From is this runner's advertised address.
	From string
	// TLS, when not nil, calls peers over https, verified as TLS says, and
	// presents this runner's certificate to a server that asks.
	TLS *TLS
	// Logger says, at most once a minute per peer, when a call fails
	// because the peer's TLS settings differ from ours.
	Logger *slog.Logger
}

// Client calls other runners.
type Client struct {
	secret []byte
	from   string
	tls    *TLS
	log    *slog.Logger

	mu     sync.Mutex
	mat    *tlsMaterial // the TLS generation http was built for
	http   *http.Client
	warned map[string]time.Time // peer -> last TLS warning
}

// NewClient builds a plain-HTTP client identifying itself as from, signing
// with secret.
func NewClient(secret, from string) *Client {
	return NewClientWith(ClientOptions{Secret: secret, From: from})
}

// NewClientWith builds a client.
func NewClientWith(o ClientOptions) *Client {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Client{secret: []byte(o.Secret), from: o.From, tls: o.TLS, log: o.Logger, warned: map[string]time.Time{}}
	c.http = c.newHTTP(nil)
	return c
}

func (c *Client) newHTTP(m *tlsMaterial) *http.Client {
	// Idle connections close before the server's IdleTimeout would close
	// them under a request.
	tr := &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: DefaultIdleTimeout / 2, TLSHandshakeTimeout: DefaultReadHeaderTimeout}
	if m != nil {
		tr.TLSClientConfig = m.client
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// transport returns the http.Client for the current TLS files (rebuilt
// when they were reloaded) and the URL scheme.
func (c *Client) transport() (*http.Client, string) {
	if c.tls == nil {
		return c.http, "http"
	}
	m := c.tls.material(c.log)
	c.mu.Lock()
	defer c.mu.Unlock()
	if m != c.mat {
		old := c.http
		c.http, c.mat = c.newHTTP(m), m
		old.CloseIdleConnections()
	}
	return c.http, "https"
}

func (c *Client) call(ctx context.Context, addr, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	hc, scheme := c.transport()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, scheme+"://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	setHeaders(req.Header, c.secret, http.MethodPost, path, c.from, addr, body, time.Now())
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		if terr := c.tlsTrouble(addr, err); terr != nil {
			return terr
		}
		return errs.Wrap(errs.CodeUnavailable, err, "runner "+addr)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	switch {
	case resp.StatusCode == http.StatusBadRequest && bytes.Contains(data, []byte(PlaintextRefusal)):
		return c.warnTLS(addr, errs.New(errs.CodeUnavailable, "runner %s speaks TLS on its runner port, but this runner has no %s: every instance of a cluster needs the same VOLTRO_RUNNER_TLS_* settings", addr, EnvTLSCert))
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return errs.New(errs.CodeUnauthenticated, "runner %s refused the call: %s", addr, bytes.TrimSpace(data))
	case resp.StatusCode == http.StatusConflict && bytes.Contains(data, []byte(notOwner)):
		return errs.Wrap(errs.CodeNotOwner, ErrNotServed, fmt.Sprintf("runner %s: %s", addr, notOwner))
	case resp.StatusCode == http.StatusTooManyRequests:
		return errs.Wrap(errs.CodeUnavailable, ErrBusy, fmt.Sprintf("runner %s: %s", addr, bytes.TrimSpace(data)))
	case resp.StatusCode >= 300:
		return errs.New(errs.CodeUnavailable, "runner %s: %s: %s", addr, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// tlsTrouble turns a failed call whose cause is TLS into an error that says
// which setting to look at, or returns nil.
func (c *Client) tlsTrouble(addr string, err error) error {
	if c.tls == nil {
		return nil
	}
	var rh tls.RecordHeaderError
	var verr *tls.CertificateVerificationError
	var oerr *net.OpError
	switch {
	case errors.As(err, &rh), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return c.warnTLS(addr, errs.Wrap(errs.CodeUnavailable, err, fmt.Sprintf("runner %s does not speak TLS on its runner port, but this runner has %s set: every instance of a cluster needs the same VOLTRO_RUNNER_TLS_* settings", addr, EnvTLSCert)))
	case errors.As(err, &verr):
		return c.warnTLS(addr, errs.Wrap(errs.CodeUnauthenticated, err, fmt.Sprintf("cannot verify the TLS certificate of runner %s (check %s, and %s or the SANs of that runner's certificate)", addr, EnvTLSCA, EnvTLSServerName)))
	case errors.As(err, &oerr) && oerr.Op == "remote error":
		return c.warnTLS(addr, errs.Wrap(errs.CodeUnauthenticated, err, fmt.Sprintf("runner %s refused the TLS handshake: under mutual TLS (%s set there) this runner's %s must be issued by that CA, for client use", addr, EnvTLSCA, EnvTLSCert)))
	}
	return nil
}

// warnTLS logs err at Warn unless it did so for addr within tlsWarnEvery.
func (c *Client) warnTLS(addr string, err error) error {
	now := time.Now()
	c.mu.Lock()
	last, seen := c.warned[addr]
	say := !seen || now.Sub(last) >= tlsWarnEvery
	if say {
		if len(c.warned) >= 4096 {
			clear(c.warned)
		}
		c.warned[addr] = now
	}
	c.mu.Unlock()
	if say {
		c.log.Warn("runner rpc: a call failed because of TLS settings", "peer", addr, "err", err)
	}
	return err
}

// Ping checks a runner answers and accepts our signature.
func (c *Client) Ping(ctx context.Context, addr string) error {
	return c.call(ctx, addr, PathPing, nil, nil)
}

// Wake asks addr to read shards now. An errs.CodeNotOwner error says addr
// holds none of them (an older runner answers success either way).
func (c *Client) Wake(ctx context.Context, addr string, shards []string) error {
	return c.call(ctx, addr, PathWake, WakeRequest{Shards: shards}, nil)
}

// PushReply tells addr that requestID has its final reply.
func (c *Client) PushReply(ctx context.Context, addr string, requestID int64) error {
	return c.call(ctx, addr, PathReply, ReplyPush{RequestID: requestID}, nil)
}

// Volatile delivers a non-persisted message through its owner.
func (c *Client) Volatile(ctx context.Context, addr string, req VolatileRequest) ([]byte, error) {
	var resp VolatileResponse
	if err := c.call(ctx, addr, PathVolatile, req, &resp); err != nil {
		return nil, err
	}
	if len(resp.Error) > 0 {
		return nil, errs.Decode(resp.Error)
	}
	return resp.Payload, nil
}

// String is for logs.
func (c *Client) String() string { return fmt.Sprintf("rpc client from %s", c.from) }
