package rpc

// The server side: an http.Handler for the runner port.

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
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

// Handlers is what the engine serves.
type Handlers struct {
	Wake     func(shards []string)
	Reply    func(requestID int64)
	Volatile func(ctx context.Context, req VolatileRequest) ([]byte, error)
}

// Server verifies and dispatches runner RPC.
type Server struct {
	secret  []byte
	h       Handlers
	log     *slog.Logger
	refused func()
}

// NewServer builds the handler. refused, if not nil, counts refusals.
func NewServer(secret string, h Handlers, log *slog.Logger, refused func()) *Server {
	if refused == nil {
		refused = func() {}
	}
	return &Server{secret: []byte(secret), h: h, log: log, refused: refused}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	if ok, reason := verify(s.secret, r, body, time.Now()); !ok {
		s.refused()
		s.log.Warn("runner rpc: refused an unauthenticated call", "reason", reason, "path", r.URL.Path, "remote", r.RemoteAddr, "from", r.Header.Get(headerFrom))
		http.Error(w, "voltro runner rpc: "+reason, http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case PathPing:
		w.WriteHeader(http.StatusNoContent)
	case PathWake:
		req, ok := decode[WakeRequest](w, body, "wake request")
		if !ok {
			return
		}
		s.h.Wake(req.Shards)
		w.WriteHeader(http.StatusNoContent)
	case PathReply:
		req, ok := decode[ReplyPush](w, body, "reply push")
		if !ok {
			return
		}
		s.h.Reply(req.RequestID)
		w.WriteHeader(http.StatusNoContent)
	case PathVolatile:
		req, ok := decode[VolatileRequest](w, body, "volatile request")
		if !ok {
			return
		}
		payload, err := s.h.Volatile(r.Context(), req)
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

// decode reads a request body, answering 400 when it is not one.
func decode[T any](w http.ResponseWriter, body []byte, what string) (T, bool) {
	var req T
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "bad "+what+": "+err.Error(), http.StatusBadRequest)
		return req, false
	}
	return req, true
}
