package rpc

// Routed starts: a workflow start sent to the runner that holds its shard,
// which inserts it already claimed and runs it at once, and the push that
// tells the starter when the run stopped executing there.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/voltro/voltro/internal/errs"
)

// ErrBusy is the cause of a call the receiver refused because the
// caller's address had too many calls in flight (429): nothing ran.
var ErrBusy = errors.New("too many calls in flight")

// ErrNotServed is the cause of a call the receiver refused before doing
// anything because it does not serve what the call names (a shard it does
// not hold): the caller may send it elsewhere. A Volatile handler returns
// an error wrapping it to refuse that way.
var ErrNotServed = errors.New("not served by this runner")

// Paths of routed starts.
const (
	PathStart    = "/_voltro/rpc/start"
	PathRunEnded = "/_voltro/rpc/run-ended"
)

// StartRequest is a start for a run on Shard, which the receiver must
// hold; Body is the workflow layer's encoding of the start.
type StartRequest struct {
	Shard string          `json:"shard"`
	Body  json.RawMessage `json:"body"`
}

// StartResponse carries the started run (the workflow layer's encoding)
// or the start's encoded error.
type StartResponse struct {
	Body  json.RawMessage `json:"body,omitempty"`
	Error json.RawMessage `json:"error,omitempty"`
}

// RunEnded tells the runner that started RunID through the sender that the
// run stopped executing there; the receiver reads the run's row. Body is
// ignored: runners of earlier versions sent the finished run in it, which
// anyone holding the cluster secret could forge.
type RunEnded struct {
	RunID string          `json:"runId"`
	Body  json.RawMessage `json:"body,omitempty"`
}

// RunsEnded is one push of several ends, in the order they happened.
type RunsEnded struct {
	Runs []RunEnded `json:"runs"`
}

// MaxRunsEnded is the most ends one push carries.
const MaxRunsEnded = 1024

// DecodeStart decodes a start request body.
func DecodeStart(body []byte) (StartRequest, error) {
	var req StartRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, errs.Wrap(errs.CodeDecode, err, "bad start request")
	}
	if req.Shard == "" || len(req.Shard) > maxField || len(req.Body) == 0 {
		return StartRequest{}, errs.New(errs.CodeDecode, "bad start request: a shard of 1 to %d bytes and a body are required", maxField)
	}
	return req, nil
}

// DecodeRunsEnded decodes a run-ended push body.
func DecodeRunsEnded(body []byte) (RunsEnded, error) {
	var req RunsEnded
	if err := json.Unmarshal(body, &req); err != nil {
		return req, errs.Wrap(errs.CodeDecode, err, "bad run-ended push")
	}
	if len(req.Runs) == 0 || len(req.Runs) > MaxRunsEnded {
		return RunsEnded{}, errs.New(errs.CodeDecode, "bad run-ended push: %d runs (1 to %d)", len(req.Runs), MaxRunsEnded)
	}
	for _, r := range req.Runs {
		if r.RunID == "" || len(r.RunID) > maxField {
			return RunsEnded{}, errs.New(errs.CodeDecode, "bad run-ended push: a run id of 1 to %d bytes is required", maxField)
		}
	}
	return req, nil
}

// Start sends a start to addr, the holder of req.Shard, and returns the
// started run as addr encoded it. An error the start itself ended with
// comes back as it was (errs codes kept); errs.CodeNotOwner says addr does
// not hold the shard (nothing was started); errs.CodeUnavailable is a call
// that failed, after which the run may or may not exist.
func (c *Client) Start(ctx context.Context, addr string, req StartRequest) ([]byte, error) {
	var resp StartResponse
	if err := c.call(ctx, addr, PathStart, req, &resp); err != nil {
		return nil, err
	}
	if len(resp.Error) > 0 {
		return nil, errs.Decode(resp.Error)
	}
	return resp.Body, nil
}

// PushRunsEnded tells addr that runs it started through this runner
// stopped executing here.
func (c *Client) PushRunsEnded(ctx context.Context, addr string, req RunsEnded) error {
	return c.call(ctx, addr, PathRunEnded, req, nil)
}

// dispatchStart serves PathStart and PathRunEnded for the caller from.
func (s *Server) dispatchStart(w http.ResponseWriter, r *http.Request, from string, body []byte) {
	switch r.URL.Path {
	case PathStart:
		req, err := DecodeStart(body)
		if !ok(w, err) {
			return
		}
		var resp StartResponse
		if s.h.Start == nil {
			resp.Error = errs.Encode(errs.New(errs.CodeNotOwner, "this runner takes no routed starts"))
		} else if out, err := s.h.Start(r.Context(), from, req); err != nil {
			resp.Error = errs.Encode(err)
		} else {
			resp.Body = out
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	case PathRunEnded:
		req, err := DecodeRunsEnded(body)
		if !ok(w, err) {
			return
		}
		if s.h.RunEnded != nil {
			for _, r := range req.Runs {
				s.h.RunEnded(from, r)
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}
}
