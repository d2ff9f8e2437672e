package rpc

// The client side: signed calls to another runner's advertised address.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// Client calls other runners.
type Client struct {
	secret []byte
	from   string
	http   *http.Client
}

// NewClient builds a client identifying itself as from, signing with
// secret (the first of a rotation list; see ParseSecrets).
func NewClient(secret, from string) *Client {
	// Idle connections close before the server's IdleTimeout would close
	// them under a request.
	tr := &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: DefaultIdleTimeout / 2}
	return &Client{secret: []byte(secret), from: from, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (c *Client) call(ctx context.Context, addr, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	setHeaders(req.Header, c.secret, http.MethodPost, path, c.from, addr, body, time.Now())
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return errs.Wrap(errs.CodeUnavailable, err, "runner "+addr)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return errs.New(errs.CodeUnauthenticated, "runner %s refused the call: %s", addr, bytes.TrimSpace(data))
	case resp.StatusCode >= 300:
		return errs.New(errs.CodeUnavailable, "runner %s: %s: %s", addr, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// Ping checks a runner answers and accepts our signature.
func (c *Client) Ping(ctx context.Context, addr string) error {
	return c.call(ctx, addr, PathPing, nil, nil)
}

// Wake asks addr to read shards now.
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
