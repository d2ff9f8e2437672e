package serve

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/store"
)

// Paths of the routes this package adds.
const (
	PathLogs          = "/_voltro/inspect/logs"
	PathMetrics       = "/_voltro/metrics"
	PathAdminCancel   = "/_voltro/admin/workflows/{id}/cancel"
	PathAdminReplay   = "/_voltro/admin/messages/{id}/replay"
	defaultTail       = 200
	adminDisabledText = "admin actions are disabled on this instance until VOLTRO_ADMIN_TOKEN is set"
)

// Headers of the log route's answer naming the instance that served it.
const (
	HeaderReplica = "X-Voltro-Replica-Id"
	HeaderRunner  = "X-Voltro-Runner-Address"
)

// Config is what the routes read and act on.
type Config struct {
	Engine    *engine.Engine
	Ring      *observe.Ring
	Telemetry *observe.Telemetry
	// Schedules returns firings per schedule and outcome (the instance's scheduler);
	// nil when the app has none.
	Schedules func() map[string]map[string]int64
	// CancelWorkflow asks a run to stop (workflow.Engine.Cancel).
	CancelWorkflow func(ctx context.Context, id string) error
	// IntrospectionDropped counts introspection rows dropped under load; nil
	// while no workflow engine exists.
	IntrospectionDropped func() int64
	Logger               *slog.Logger
}

// Install registers the routes on the engine's inspect server (call before
// Start) and the engine's collectors in the telemetry's registry.
func Install(c Config) error {
	if c.Logger == nil {
		c.Logger = c.Engine.Logger()
	}
	reg := c.Telemetry.Registry()
	if err := reg.Register(&collector{c: c}); err != nil {
		return fmt.Errorf("observe: registering the engine collector: %w", err)
	}
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return fmt.Errorf("observe: registering the Go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return fmt.Errorf("observe: registering the process collector: %w", err)
	}
	e := c.Engine
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{c.Logger}, ErrorHandling: promhttp.ContinueOnError})
	e.HandleHTTP(func(mux *http.ServeMux) {
		mux.HandleFunc(PathLogs, e.ReadOnly(c.logs))
		mux.HandleFunc(PathMetrics, e.ReadOnly(metrics.ServeHTTP))
		mux.HandleFunc(PathAdminCancel, c.admin(c.cancel))
		mux.HandleFunc(PathAdminReplay, c.admin(c.replay))
	})
	return nil
}

// logs serves the ring, oldest first: ?tail=N (default 200, 0 = everything
// kept), ?level=debug|info|warn|error (default debug), and the boot records
// before the tail unless ?boot=false.
func (c Config) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tail := defaultTail
	if s := q.Get("tail"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "tail must be a whole number >= 0, got " + strconv.Quote(s)})
			return
		}
		tail = n
	}
	floor := slog.LevelDebug
	if s := q.Get("level"); s != "" {
		if err := floor.UnmarshalText([]byte(s)); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "level must be debug, info, warn or error, got " + strconv.Quote(s)})
			return
		}
	}
	var recs []observe.Record
	if b, err := strconv.ParseBool(q.Get("boot")); err == nil && !b {
		recs = c.Ring.Tail(tail, floor)
	} else {
		recs = c.Ring.TailWithBoot(tail, floor)
	}
	if recs == nil {
		recs = []observe.Record{}
	}
	// who answers, so `voltro logs` can tell when another instance took over
	// the inspect address it asked
	w.Header().Set(HeaderReplica, c.Engine.Config().ReplicaID)
	w.Header().Set(HeaderRunner, c.Engine.Address())
	writeJSON(w, http.StatusOK, recs)
}

// admin guards an admin route: refused outright while no admin token is
// configured, POST only, and the bearer must be the admin token.
func (c Config) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := c.Engine.Config().AdminToken
		if tok == "" {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": adminDisabledText})
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "admin action: use POST"})
			return
		}
		guesses := c.Engine.AdminGuesses()
		if retry, blocked := guesses.Blocked(r); blocked {
			inspect.Refuse(w, retry)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(tok)) != 1 {
			guesses.Wrong(r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="voltro admin"`)
			what := "wrong"
			if !ok {
				what = "missing"
			}
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": what + " bearer token: admin actions need Authorization: Bearer <VOLTRO_ADMIN_TOKEN>"})
			return
		}
		h(w, r)
	}
}

func (c Config) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if c.CancelWorkflow == nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "this instance's store keeps no workflows"})
		return
	}
	if err := c.CancelWorkflow(r.Context(), id); err != nil {
		writeErr(w, fmt.Errorf("cancelling workflow %s: %w", id, err))
		return
	}
	c.Logger.Info("admin: workflow cancel requested", "execution", id, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "cancelRequested": true})
}

func (c Config) replay(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "message id " + strconv.Quote(raw) + " is not a number"})
		return
	}
	d := c.Engine.Store()
	if err := d.ReplayDead(r.Context(), id); err != nil {
		writeErr(w, fmt.Errorf("replaying message %d: %w", id, err))
		return
	}
	if m, err := d.GetMessage(r.Context(), id); err == nil {
		c.Engine.WakeShard(m.Shard)
	}
	c.Logger.Info("admin: dead letter replayed", "message", id, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "state": store.StatePending})
}

// writeErr answers err with the status of its voltro code.
func writeErr(w http.ResponseWriter, err error) {
	writeJSON(w, errs.HTTPStatus(err), map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// slogPrinter hands promhttp's error log to slog.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) {
	p.log.Warn("metrics endpoint: " + strings.TrimSpace(fmt.Sprintln(v...)))
}

// check the collector type at compile time
var _ prometheus.Collector = (*collector)(nil)
