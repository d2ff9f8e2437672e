package engine

// The inspect server: liveness, readiness (this instance), cluster health
// (the cluster as a whole) and the cluster inspect document,
// read-only, on loopback unless configured, behind a bearer token when one
// is set. Liveness and readiness also answer a caller that sends no
// Authorization header at all, with the verdict only, so a kubelet probe
// needs no secret.

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/rpc"
)

func (e *Engine) listenInspect() error {
	ln, err := net.Listen("tcp", e.cfg.InspectAddr)
	if err != nil {
		return errs.Wrap(errs.CodeUnavailable, err, "inspect server cannot listen on "+e.cfg.InspectAddr+" (VOLTRO_INSPECT_ADDR)")
	}
	e.inspectLn = ln
	mux := http.NewServeMux()
	mux.HandleFunc(inspect.PathLive, e.probe(func(w http.ResponseWriter, r *http.Request, full bool) {
		if !full {
			writeJSON(w, http.StatusOK, map[string]any{"live": true})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"live": true, "replicaId": e.cfg.ReplicaID})
	}))
	mux.HandleFunc(inspect.PathReady, e.probe(func(w http.ResponseWriter, r *http.Request, full bool) {
		h := e.Health(r.Context())
		code := http.StatusOK
		if !h.Ready {
			code = http.StatusServiceUnavailable
		}
		if !full {
			writeJSON(w, code, map[string]any{"ready": h.Ready})
			return
		}
		writeJSON(w, code, h)
	}))
	mux.HandleFunc(inspect.PathClusterHealth, e.readOnly(func(w http.ResponseWriter, r *http.Request) {
		h := e.ClusterHealth(r.Context())
		code := http.StatusOK
		if !h.Healthy {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, h)
	}))
	mux.HandleFunc(inspect.PathInspect, e.readOnly(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, e.Inspect(r.Context()))
	}))
	for _, f := range e.extraMux {
		f(mux)
	}
	// Without a token, a page of another site that rebinds its name to
	// this address must get nothing (inspect.HostCheck).
	hosts := inspect.HostCheck{Token: e.cfg.InspectToken, Trust: e.cfg.InspectTrust, Listen: e.cfg.InspectAddr}
	e.httpServer = rpc.Bounded(hosts.Wrap(mux, inspect.PathLive, inspect.PathReady), e.cfg.RPCMaxBody, rpc.DefaultPerPeer, 0, e.log)
	go func() { _ = e.httpServer.Serve(ln) }()
	e.log.Info("inspect endpoint listening", "addr", ln.Addr().String(), "paths", []string{inspect.PathInspect, inspect.PathLive, inspect.PathReady, inspect.PathClusterHealth})
	return nil
}

// InspectAddr is where the inspect server listens (after Start).
func (e *Engine) InspectAddr() string {
	if e.inspectLn == nil {
		return ""
	}
	return e.inspectLn.Addr().String()
}

// ReadOnly wraps a handler added with HandleHTTP in the checks every
// inspect route has: GET/HEAD only, and the VOLTRO_INSPECT_TOKEN bearer.
func (e *Engine) ReadOnly(h http.HandlerFunc) http.HandlerFunc { return e.readOnly(h) }

// RPCRefused counts runner RPC calls refused (bad signature, stale clock).
func (e *Engine) RPCRefused() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refused
}

// readOnly refuses non-GET methods and checks the bearer token.
func (e *Engine) readOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "read-only endpoint: use GET"})
			return
		}
		if tok := e.cfg.InspectToken; tok != "" && !bearer(r, tok) {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token (VOLTRO_INSPECT_TOKEN)"})
			return
		}
		h(w, r)
	}
}

// probe is readOnly for the liveness and readiness routes, with one
// difference: a request without any Authorization header (a kubelet probe,
// which cannot read a Secret) is served with full=false, and h then writes
// the verdict only (status code and live/ready), no replica, reasons or drain
// figures. A wrong bearer is still refused, so a misconfigured client learns
// it. Without a token, a request whose Host the server does not answer in
// full (inspect.HostCheck) gets the verdict only as well.
func (e *Engine) probe(h func(w http.ResponseWriter, r *http.Request, full bool)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if (e.cfg.InspectToken != "" && r.Header.Get("Authorization") == "" || inspect.Limited(r)) &&
			(r.Method == http.MethodGet || r.Method == http.MethodHead) {
			h(w, r, false)
			return
		}
		e.readOnly(func(w http.ResponseWriter, r *http.Request) { h(w, r, true) })(w, r)
	}
}

func bearer(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Inspect builds the inspect document.
func (e *Engine) Inspect(ctx context.Context) inspect.Doc {
	rs := e.runner.Status()
	doc := inspect.Doc{
		ReplicaID: e.cfg.ReplicaID, RunnerAddress: e.address, InspectAddr: e.InspectAddr(),
		Dialect: string(e.d.Dialect()), Tier: e.Tier(), RunnerStorage: string(e.cfg.RunnerStorage),
		CDCFlavor: e.cdcFlavor(), Coordination: e.coordination(),
		ShardLock:     inspect.ShardLockDoc{Requested: string(e.cfg.ShardLock), Mode: string(e.lockMode), Reason: e.lockReason, Healthy: rs.LockHealthy},
		LocalhostRisk: e.cfg.LocalhostRisk, EntityTypes: e.deliv.Types(),
		LiveRunners: rs.LiveRunners, Suspects: rs.Suspects, FrozenFenced: rs.Fences, StaleRunners: rs.StaleRunners,
		Health:  e.Health(ctx),
		Pool:    inspect.PoolDoc{Healthy: rs.PoolHealthy, LastOK: rs.PoolLastOK, Failures: rs.PoolFailures, Error: rs.PoolError},
		Version: Version, UptimeSeconds: time.Since(e.started).Seconds(),
		Retention: e.retentionDoc(),
	}
	e.mu.Lock()
	doc.RPCRefused = e.refused
	e.mu.Unlock()
	if extra := e.extra(); len(extra) > 0 {
		doc.Extra = extra
	}
	for s, ep := range rs.Held {
		doc.OwnedShards = append(doc.OwnedShards, inspect.OwnedShard{Shard: s, Epoch: ep})
	}
	sort.Slice(doc.OwnedShards, func(i, j int) bool { return doc.OwnedShards[i].Shard < doc.OwnedShards[j].Shard })
	return doc
}
