package rpc

// The server side of the runner port's TLS: a listener that completes each
// handshake before http.Server sees the connection, so a refused handshake
// (plain HTTP, no client certificate, a certificate of another CA) is
// classified, counted and logged here, aggregated, and never reaches a
// handler.

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

// PlaintextRefusal is the body of the 400 a TLS runner port answers to a
// plain HTTP request; a plain client recognises it.
const PlaintextRefusal = "voltro runner rpc: this runner port speaks TLS (" + EnvTLSCert + " is set here); a plain HTTP call was refused: every instance of a cluster needs the same " + "VOLTRO_RUNNER_TLS_* settings"

// Listener wraps ln for the runner port: with TLS, a listener that hands
// http.Server only connections whose handshake succeeded; without, ln.
func (s *Server) Listener(ln net.Listener) net.Listener {
	if s.o.TLS == nil {
		return ln
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &tlsListener{Listener: ln, s: s, conns: make(chan net.Conn), ctx: ctx, close: cancel}
	go l.acceptLoop()
	return l
}

type tlsListener struct {
	net.Listener
	s     *Server
	conns chan net.Conn
	// ctx ends when the listener closes, and with it pending handshakes.
	ctx   context.Context
	close context.CancelFunc
}

func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.ctx.Done():
		return nil, net.ErrClosed
	}
}

func (l *tlsListener) Close() error {
	l.close()
	return l.Listener.Close()
}

// acceptLoop accepts until the listener closes, and handshakes each
// connection on its own goroutine (a slow client holds only its own).
// Other accept errors (out of file descriptors) back off as http.Server's
// own loop does.
func (l *tlsListener) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			if errors.Is(err, net.ErrClosed) {
				l.close()
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.s.log.Debug("runner rpc: accept failed; retrying", "err", err, "in", backoff)
			select {
			case <-time.After(backoff):
			case <-l.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		go l.handshake(c)
	}
}

func (l *tlsListener) handshake(c net.Conn) {
	s := l.s
	remote := c.RemoteAddr().String()
	peer, _, err := net.SplitHostPort(remote)
	if err != nil {
		peer = remote
	}
	// A pending handshake counts against the peer's limit like a call.
	if !s.enter(peer) {
		_ = c.Close()
		s.handshakeRefused(remote, "too many concurrent connections from one address", "")
		return
	}
	defer s.leave(peer)
	timeout := s.o.ReadHeaderTimeout
	if timeout <= 0 {
		timeout = DefaultReadHeaderTimeout
	}
	ctx, cancel := context.WithTimeout(l.ctx, timeout)
	defer cancel()
	_ = c.SetDeadline(time.Now().Add(timeout))
	tc := tls.Server(c, s.o.TLS.material(s.log).server)
	if err := tc.HandshakeContext(ctx); err != nil {
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) && rh.Conn != nil && looksLikeHTTP(rh.RecordHeader) {
			// As net/http does for an HTTPS server, in words a voltro
			// client recognises.
			_, _ = io.WriteString(rh.Conn, "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"+PlaintextRefusal+"\n")
		}
		_ = c.Close()
		reason, quiet := handshakeReason(err)
		if quiet {
			s.log.Debug("runner rpc: a connection closed before its TLS handshake", "remote", remote, "err", err)
			return
		}
		s.handshakeRefused(remote, reason, err.Error())
		return
	}
	_ = c.SetDeadline(time.Time{})
	select {
	case l.conns <- tc:
	case <-l.ctx.Done():
		_ = tc.Close()
	}
}

func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "CONNE", "TRACE":
		return true
	}
	return false
}

// handshakeReason classifies a failed handshake; quiet ones (a TCP probe or
// a port scan closing without a word) are not refusals.
func handshakeReason(err error) (reason string, quiet bool) {
	var rh tls.RecordHeaderError
	var verr *tls.CertificateVerificationError
	var nerr net.Error
	var oerr *net.OpError
	switch {
	case errors.As(err, &rh):
		return "not TLS (a plain HTTP call, or another protocol)", false
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return "", true
	case errors.As(err, &verr):
		return "client certificate not trusted (it does not chain to " + EnvTLSCA + ", or has expired)", false
	case errors.As(err, &oerr) && oerr.Op == "remote error":
		return "the caller refused this runner's certificate (its " + EnvTLSCA + ", or " + EnvTLSServerName + " and the SANs of this runner's certificate)", false
	case strings.Contains(err.Error(), "didn't provide a certificate"):
		return "no client certificate (mutual TLS: " + EnvTLSCA + " is set here)", false
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "handshake not completed in time", false
	}
	return "handshake failed", false
}

// handshakeRefused counts a refused connection and logs it, aggregated.
func (s *Server) handshakeRefused(remote, reason, detail string) {
	s.o.Refused()
	s.hsLog.refused(remote, reason, "err", capped(detail, 300))
}
