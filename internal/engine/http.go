package engine

// The inspect server: liveness, readiness (this instance), cluster health
// (the cluster as a whole) and the cluster inspect document,
// read-only, on loopback unless configured, behind a bearer token when one
// is set.

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
	"github.com/voltro/voltro/internal/rpc"
)

// Paths of the inspect server.
const (
	PathLive    = "/_voltro/health/live"
	PathReady   = "/_voltro/health/ready"
	PathInspect = "/_voltro/inspect/cluster"
)

func (e *Engine) listenInspect() error {
	ln, err := net.Listen("tcp", e.cfg.InspectAddr)
	if err != nil {
		return errs.Wrap(errs.CodeUnavailable, err, "inspect server cannot listen on "+e.cfg.InspectAddr+" (VOLTRO_INSPECT_ADDR)")
	}
	e.inspectLn = ln
	mux := http.NewServeMux()
	mux.HandleFunc(PathLive, e.readOnly(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"live": true, "replicaId": e.cfg.ReplicaID})
	}))
	mux.HandleFunc(PathReady, e.readOnly(func(w http.ResponseWriter, r *http.Request) {
		h := e.Health(r.Context())
		code := http.StatusOK
		if !h.Ready {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, h)
	}))
	mux.HandleFunc(PathClusterHealth, e.readOnly(func(w http.ResponseWriter, r *http.Request) {
		h := e.ClusterHealth(r.Context())
		code := http.StatusOK
		if !h.Healthy {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, h)
	}))
	mux.HandleFunc(PathInspect, e.readOnly(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, e.Inspect(r.Context()))
	}))
	for _, f := range e.extraMux {
		f(mux)
	}
	e.httpServer = rpc.Bounded(mux, e.cfg.RPCMaxBody, rpc.DefaultPerPeer, 0, e.log)
	go func() { _ = e.httpServer.Serve(ln) }()
	e.log.Info("inspect endpoint listening", "addr", ln.Addr().String(), "paths", []string{PathInspect, PathLive, PathReady, PathClusterHealth})
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

// OwnedShard is one held shard with its epoch.
type OwnedShard struct {
	Shard string `json:"shard"`
	Epoch int64  `json:"epoch"`
}

// InspectDoc is the per-instance inspect document.
type InspectDoc struct {
	ReplicaID     string            `json:"replicaId"`
	RunnerAddress string            `json:"runnerAddress"`
	InspectAddr   string            `json:"inspectAddress"`
	Dialect       string            `json:"dialect"`
	Tier          string            `json:"tier"`
	RunnerStorage string            `json:"runnerStorage"`
	CDCFlavor     string            `json:"cdcFlavor"`
	Coordination  string            `json:"coordination"`
	ShardLock     ShardLockDoc      `json:"shardLock"`
	ServerID      uint32            `json:"serverId,omitempty"`
	LocalhostRisk bool              `json:"localhostRisk"`
	OwnedShards   []OwnedShard      `json:"ownedShards"`
	EntityTypes   []string          `json:"entityTypes"`
	LiveRunners   []string          `json:"liveRunners"`
	Suspects      []string          `json:"suspectRunners,omitempty"`
	FrozenFenced  int64             `json:"frozenRunnersFenced"`
	StaleRunners  int               `json:"staleRunners"`
	Health        Health            `json:"health"`
	Pool          PoolDoc           `json:"pool"`
	Version       string            `json:"version"`
	UptimeSeconds float64           `json:"uptimeSeconds"`
	RPCRefused    int64             `json:"rpcRefused"`
	Extra         map[string]string `json:"extra,omitempty"`
	// Retention is the retention in force on this instance and its
	// sweeper's state.
	Retention *RetentionDoc `json:"retention,omitempty"`
}

// ShardLockDoc says how shard ownership is coordinated and why.
type ShardLockDoc struct {
	Requested string `json:"requested"`
	Mode      string `json:"mode"`
	Reason    string `json:"reason"`
	Healthy   bool   `json:"healthy"`
}

// PoolDoc is the application pool's health.
type PoolDoc struct {
	Healthy  bool      `json:"healthy"`
	LastOK   time.Time `json:"lastOk"`
	Failures int64     `json:"probeFailures"`
	Error    string    `json:"error,omitempty"`
}

// Inspect builds the inspect document.
func (e *Engine) Inspect(ctx context.Context) InspectDoc {
	rs := e.runner.Status()
	doc := InspectDoc{
		ReplicaID: e.cfg.ReplicaID, RunnerAddress: e.address, InspectAddr: e.InspectAddr(),
		Dialect: string(e.d.Dialect()), Tier: e.tier, RunnerStorage: string(e.cfg.RunnerStorage),
		CDCFlavor: e.cdcFlavor(), Coordination: e.coordination(),
		ShardLock:     ShardLockDoc{Requested: string(e.cfg.ShardLock), Mode: string(e.lockMode), Reason: e.lockReason, Healthy: rs.LockHealthy},
		LocalhostRisk: e.cfg.LocalhostRisk, EntityTypes: e.deliv.Types(),
		LiveRunners: rs.LiveRunners, Suspects: rs.Suspects, FrozenFenced: rs.Fences, StaleRunners: rs.StaleRunners,
		Health:  e.Health(ctx),
		Pool:    PoolDoc{Healthy: rs.PoolHealthy, LastOK: rs.PoolLastOK, Failures: rs.PoolFailures, Error: rs.PoolError},
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
		doc.OwnedShards = append(doc.OwnedShards, OwnedShard{Shard: s, Epoch: ep})
	}
	sort.Slice(doc.OwnedShards, func(i, j int) bool { return doc.OwnedShards[i].Shard < doc.OwnedShards[j].Shard })
	return doc
}
