package rpc

import (
	"encoding/json"

	"github.com/voltro/voltro/internal/errs"
)

// Limits of a decoded request, beyond the body cap.
const (
	maxWakeShards = 4096
	maxField      = 1024 // shard, entity type, entity id, tag
	maxHeaders    = 64
)

// DecodeWake decodes a wake request body.
func DecodeWake(body []byte) (WakeRequest, error) {
	var req WakeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, errs.Wrap(errs.CodeDecode, err, "bad wake request")
	}
	if len(req.Shards) > maxWakeShards {
		return WakeRequest{}, errs.New(errs.CodeDecode, "bad wake request: %d shards (at most %d)", len(req.Shards), maxWakeShards)
	}
	for _, s := range req.Shards {
		if len(s) > maxField {
			return WakeRequest{}, errs.New(errs.CodeDecode, "bad wake request: a shard name of %d bytes", len(s))
		}
	}
	return req, nil
}

// DecodeReply decodes a reply push body.
func DecodeReply(body []byte) (ReplyPush, error) {
	var req ReplyPush
	if err := json.Unmarshal(body, &req); err != nil {
		return req, errs.Wrap(errs.CodeDecode, err, "bad reply push")
	}
	if req.RequestID <= 0 {
		return ReplyPush{}, errs.New(errs.CodeDecode, "bad reply push: request id %d", req.RequestID)
	}
	return req, nil
}

// DecodeVolatile decodes a volatile request body.
func DecodeVolatile(body []byte) (VolatileRequest, error) {
	var req VolatileRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, errs.Wrap(errs.CodeDecode, err, "bad volatile request")
	}
	for name, v := range map[string]string{"shard": req.Shard, "entityType": req.EntityType, "entityId": req.EntityID, "tag": req.Tag} {
		if len(v) > maxField {
			return VolatileRequest{}, errs.New(errs.CodeDecode, "bad volatile request: %s of %d bytes", name, len(v))
		}
	}
	if req.EntityType == "" || req.EntityID == "" || req.Shard == "" {
		return VolatileRequest{}, errs.New(errs.CodeDecode, "bad volatile request: shard, entity type and entity id are required")
	}
	if len(req.Headers) > maxHeaders {
		return VolatileRequest{}, errs.New(errs.CodeDecode, "bad volatile request: %d headers (at most %d)", len(req.Headers), maxHeaders)
	}
	return req, nil
}
