package inspectclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// Client asks instances' inspect servers over HTTP. It is the only code
// that puts the inspect token on a request: in the Authorization header
// (never in the URL), and only to an address its Trust allows.
type Client struct {
	http  *http.Client
	token string
	trust Trust
}

// New returns a client that sends token (VOLTRO_INSPECT_TOKEN, "" for none)
// to the hosts trust allows. c is copied (nil is a plain client); its
// redirect policy is wrapped so that a redirect to another host:port is not
// followed, whoever answers: the token goes only to the address asked.
func New(c *http.Client, token string, trust Trust) *Client {
	hc := &http.Client{}
	if c != nil {
		*hc = *c
	}
	next := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if first := via[0].URL; req.URL.Host != first.Host {
			return fmt.Errorf("redirected to %q, not followed: an inspect call follows redirects only on the address it asked (%s), so the inspect token goes nowhere else", req.URL.Redacted(), first.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &Client{http: hc, token: token, trust: trust}
}

// Get asks the inspect server at addr (host:port) for pathQuery
// ("/_voltro/…", with its query). When a token is set but addr's host is
// not trusted, the request goes without it and withheld says why (a
// sentence naming the host and VOLTRO_INSPECT_TRUSTED_HOSTS); the caller
// must show it. The caller closes the response body.
func (c *Client) Get(ctx context.Context, addr, pathQuery string) (resp *http.Response, withheld string, err error) {
	// An address that is not a plain host:port ("a@b:80", "h:1/x?") would
	// send the request elsewhere than it reads.
	_, port, serr := net.SplitHostPort(addr)
	if u, perr := url.Parse("http://" + addr + "/"); serr != nil || port == "" || perr != nil || u.Host != addr || u.User != nil || u.Path != "/" {
		return nil, "", fmt.Errorf("inspect address %q is not host:port", addr)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+pathQuery, nil)
	if err != nil {
		return nil, "", fmt.Errorf("inspect request to %s: %w", addr, err)
	}
	if c.token != "" {
		if ok, why := c.trust.Allows(ctx, req.URL.Hostname()); ok {
			req.Header.Set("Authorization", "Bearer "+c.token)
		} else {
			withheld = why
		}
	}
	resp, err = c.http.Do(req)
	return resp, withheld, err
}
