package rpc

// The server side: an http.Handler for the runner port, and the
// http.Server that bounds it.

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// Paths of the runner RPC.
const (
	PathWake     = "/_voltro/rpc/wake"
	PathReply    = "/_voltro/rpc/reply"
	PathVolatile = "/_voltro/rpc/volatile"
	PathPing     = "/_voltro/rpc/ping"
)

// Defaults of ServerOptions.
const (
	DefaultMaxBody           = 1 << 20
	DefaultPerPeer           = 64
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 15 * time.Second
	// DefaultWriteTimeout covers a volatile handler (the client gives up
	// after 30 s) and writing its reply.
	DefaultWriteTimeout = 40 * time.Second
	DefaultIdleTimeout  = 60 * time.Second
	// maxNonces bounds the replay cache; only correctly signed calls are
	// remembered, so reaching it means a peer floods with valid calls.
	maxNonces = 1 << 20
)

// WakeRequest asks the owner to read some shards now.
type WakeRequest struct {
	Shards []string `json:"shards"`
}

// ReplyPush tells a requester its reply is stored.
type ReplyPush struct {
	RequestID int64 `json:"requestId"`
}

// VolatileRequest is a non-persisted message for an entity.
type VolatileRequest struct {
	Shard      string            `json:"shard"`
	EntityType string            `json:"entityType"`
	EntityID   string            `json:"entityId"`
	Tag        string            `json:"tag,omitempty"`
	Payload    []byte            `json:"payload"`
	Headers    map[string]string `json:"headers,omitempty"`
}

// VolatileResponse carries the handler's reply or its encoded error.
type VolatileResponse struct {
	Payload []byte          `json:"payload,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// Handlers is what the engine serves. A wake or a reply push only makes the
// receiver re-read the store; a volatile message runs a handler and the
// engine decides which (never a workflow's). Wake reports whether the
// receiver holds any of the shards: when it holds none the call is
// answered 409 (errs.CodeNotOwner at the client), so a sender whose view
// of the cluster is stale can look the holder up instead.
type Handlers struct {
	Wake     func(shards []string) bool
	Reply    func(requestID int64)
	Volatile func(ctx context.Context, req VolatileRequest) ([]byte, error)
	// Start runs a start routed here by the runner from (see start.go);
	// RunEnded takes the push for a run this runner routed. Either may be
	// nil: a start is then refused as errs.CodeNotOwner, a push ignored.
	Start    func(ctx context.Context, from string, req StartRequest) ([]byte, error)
	RunEnded func(from string, req RunEnded)
}

// ServerOptions configure a Server and its http.Server.
type ServerOptions struct {
	// Self is this runner's advertised address; calls signed for another
	// target are refused.
	Self string
	// Secrets verify signatures (any of them); see ParseSecrets.
	Secrets []string
	// MaxBody caps a request body (default DefaultMaxBody).
	MaxBody int64
	// PerPeer caps concurrent requests from one remote IP (default
	// DefaultPerPeer); more are answered 429 without reading them.
	PerPeer int
	// Timeouts of the http.Server (defaults above).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// TLS, when not nil, makes the port serve TLS (mutual with a CA);
	// serve it on Listener(ln). Signatures are checked under TLS as well.
	TLS *TLS
	// Refused, if not nil, counts refusals (refused handshakes included).
	Refused func()
	Logger  *slog.Logger
}

// Server verifies and dispatches runner RPC.
type Server struct {
	o       ServerOptions
	secrets [][]byte
	h       Handlers
	log     *slog.Logger
	hsLog   *refusalLog // refused TLS handshakes
	callLog *refusalLog // refused calls
	// started: a call signed before it is refused. The nonce cache is in
	// memory, so this is what keeps a call captured before a restart from
	// being replayed after it.
	started time.Time

	mu     sync.Mutex
	nonces map[string]int64 // nonce -> unix ms after which it may be forgotten
	pruned int64
	peers  map[string]int // remote IP -> requests in flight
}

// NewServer builds the handler.
func NewServer(h Handlers, o ServerOptions) *Server {
	if o.Refused == nil {
		o.Refused = func() {}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.PerPeer <= 0 {
		o.PerPeer = DefaultPerPeer
	}
	s := &Server{o: o, h: h, log: o.Logger, hsLog: newRefusalLog(o.Logger, "runner rpc: refused a TLS handshake", "TLS handshakes"),
		callLog: newRefusalLog(o.Logger, "runner rpc: refused a call", "calls"), started: time.Now(), nonces: map[string]int64{}, peers: map[string]int{}}
	for _, k := range o.Secrets {
		s.secrets = append(s.secrets, []byte(k))
	}
	return s
}

// HTTPServer is the bounded http.Server for the handler: every timeout set,
// headers capped.
func (s *Server) HTTPServer() *http.Server {
	d := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: d(s.o.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       d(s.o.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      d(s.o.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       d(s.o.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, reason string) {
	s.o.Refused()
	// Aggregated, and every field the caller controls capped: refused
	// calls cost the caller nothing, and must not fill the log.
	s.callLog.refused(r.RemoteAddr, reason, "path", strconvQuote(r.URL.Path), "from", strconvQuote(r.Header.Get(headerFrom)))
	// The body is not read: do not keep the connection for another call.
	w.Header().Set("Connection", "close")
	http.Error(w, "voltro runner rpc: "+reason, code)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	peer, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		peer = r.RemoteAddr
	}
	if !s.enter(peer) {
		w.Header().Set("Retry-After", "1")
		s.refuse(w, r, http.StatusTooManyRequests, "too many concurrent calls from "+peer)
		return
	}
	defer s.leave(peer)

	if s.o.TLS != nil && r.TLS == nil {
		// Served on a plain listener by mistake: never accept plain text
		// on a port configured for TLS.
		s.refuse(w, r, http.StatusBadRequest, "plain HTTP on a TLS runner port")
		return
	}
	if r.Method != http.MethodPost {
		s.refuse(w, r, http.StatusMethodNotAllowed, "runner rpc takes POST")
		return
	}
	now := time.Now()
	p, reason := verifyHeaders(s.secrets, s.o.Self, r, now)
	if reason != "" {
		s.refuse(w, r, http.StatusUnauthorized, reason)
		return
	}
	if p.ts < s.started.UnixMilli() {
		// A replay of a call captured before this process started (its
		// nonce is not in this process's cache), or a peer whose clock is
		// behind ours: refused for at most that skew after a start. At
		// millisecond resolution, as signed: a process does not restart
		// within the millisecond of a call it answered.
		w.Header().Set("Retry-After", "1")
		s.refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("call signed %s before this runner started (a replay from before a restart, or the caller's clock is behind)", s.started.Sub(time.UnixMilli(p.ts)).Round(time.Millisecond)))
		return
	}
	if !s.fresh(p.nonce, now) {
		s.refuse(w, r, http.StatusUnauthorized, "replayed call (nonce seen before)")
		return
	}
	if r.ContentLength > s.o.MaxBody {
		s.refuse(w, r, http.StatusRequestEntityTooLarge, "body of "+strconv.FormatInt(r.ContentLength, 10)+" bytes exceeds VOLTRO_RPC_MAX_BODY="+strconv.FormatInt(s.o.MaxBody, 10))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.refuse(w, r, http.StatusRequestEntityTooLarge, "body exceeds VOLTRO_RPC_MAX_BODY="+strconv.FormatInt(s.o.MaxBody, 10))
			return
		}
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	if subtle.ConstantTimeCompare([]byte(bodyDigest(body)), []byte(p.digest)) != 1 {
		s.refuse(w, r, http.StatusUnauthorized, "body does not match its signed digest")
		return
	}
	s.dispatch(w, r, p.from, body)
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, from string, body []byte) {
	switch r.URL.Path {
	case PathStart, PathRunEnded:
		s.dispatchStart(w, r, from, body)
	case PathPing:
		w.WriteHeader(http.StatusNoContent)
	case PathWake:
		req, err := DecodeWake(body)
		if !ok(w, err) {
			return
		}
		if !s.h.Wake(req.Shards) {
			http.Error(w, "voltro runner rpc: "+notOwner, http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case PathReply:
		req, err := DecodeReply(body)
		if !ok(w, err) {
			return
		}
		s.h.Reply(req.RequestID)
		w.WriteHeader(http.StatusNoContent)
	case PathVolatile:
		req, err := DecodeVolatile(body)
		if !ok(w, err) {
			return
		}
		payload, err := s.h.Volatile(r.Context(), req)
		if errors.Is(err, ErrNotServed) {
			// Refused before any handler ran: the caller may send it on.
			http.Error(w, "voltro runner rpc: "+notOwner, http.StatusConflict)
			return
		}
		resp := VolatileResponse{Payload: payload}
		if err != nil {
			resp = VolatileResponse{Error: errs.Encode(err)}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	default:
		http.NotFound(w, r)
	}
}

// enter admits one more request from peer unless it has PerPeer in flight.
func (s *Server) enter(peer string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peers[peer] >= s.o.PerPeer {
		return false
	}
	s.peers[peer]++
	return true
}

func (s *Server) leave(peer string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peers[peer]--; s.peers[peer] <= 0 {
		delete(s.peers, peer)
	}
}

// fresh records nonce and reports whether it was new. Nonces are kept for
// twice the skew window: a call is accepted at most MaxSkew after (or
// before) its timestamp, so a replay is always caught.
func (s *Server) fresh(nonce string, now time.Time) bool {
	ms := now.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if ms-s.pruned > 1000 || len(s.nonces) >= maxNonces {
		for n, exp := range s.nonces {
			if exp < ms {
				delete(s.nonces, n)
			}
		}
		s.pruned = ms
	}
	if _, seen := s.nonces[nonce]; seen || len(s.nonces) >= maxNonces {
		return false
	}
	s.nonces[nonce] = ms + 2*MaxSkew.Milliseconds()
	return true
}

// notOwner is the body of a wake-up's 409: the receiver holds none of the
// shards named.
const notOwner = "this runner holds none of the shards named"

func ok(w http.ResponseWriter, err error) bool {
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// Bounded wraps h (the inspect/admin server) in the limits of the runner
// port: a body cap and PerPeer concurrent requests per remote IP, and
// returns an http.Server with every timeout set. writeTimeout bounds a
// whole response (0: DefaultWriteTimeout).
func Bounded(h http.Handler, maxBody int64, perPeer int, writeTimeout time.Duration, log *slog.Logger) *http.Server {
	s := NewServer(Handlers{}, ServerOptions{MaxBody: maxBody, PerPeer: perPeer, WriteTimeout: writeTimeout, Logger: log})
	srv := s.HTTPServer()
	srv.Handler = http.MaxBytesHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			peer = r.RemoteAddr
		}
		if !s.enter(peer) {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close")
			http.Error(w, "too many concurrent requests from "+peer, http.StatusTooManyRequests)
			return
		}
		defer s.leave(peer)
		h.ServeHTTP(w, r)
	}), s.o.MaxBody)
	return srv
}
