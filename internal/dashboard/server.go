package dashboard

// The dashboard's configuration and its routes: the embedded page, the
// JSON reads, the event stream and the admin actions.

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/observe/cli"
	"github.com/voltro/voltro/internal/status"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/workflow"
)

// Prefix is where the dashboard is served.
const Prefix = "/_voltro/ui/"

// Admin actions are refused with this text while no admin token is set.
const adminDisabledText = "admin actions are disabled here until VOLTRO_ADMIN_TOKEN is set"

//go:embed ui
var uiFiles embed.FS

// Config is what the dashboard reads and acts on.
type Config struct {
	// Store is the cluster's store (the instance's own, or DB_URL's).
	Store store.Driver
	// Cluster collects the `voltro cluster status` report.
	Cluster func(ctx context.Context) (*status.Report, error)
	// Logs says where `voltro logs` finds the instances, for the Logs
	// panel's merged tail; nil leaves the panel empty with a reason.
	Logs *cli.LogsOptions
	// Workflows is the workflow engine the actions cancel and signal
	// through; nil refuses those actions.
	Workflows func(ctx context.Context) (*workflow.Engine, error)
	// Wake tells the shard's owner a message is due (after a replay); nil
	// relies on the store's own wake-up.
	Wake func(shard string)
	// Feed pushes changes of the introspection tables; nil, or a feed
	// that sees only its own process's writes, makes the stream poll.
	Feed *cdc.Feed
	// OpenFeed, when Feed is nil, opens the feed on the first stream; it
	// is closed a while after the last one leaves (standalone dashboard).
	OpenFeed func(ctx context.Context) (*cdc.Feed, error)
	// Heartbeat is VOLTRO_WORKFLOW_FAILOVER_HEARTBEAT (for the liveness
	// of hosts and claims).
	Heartbeat time.Duration
	// AdminToken is VOLTRO_ADMIN_TOKEN; empty refuses every action.
	AdminToken string
	// Guesses limits wrong admin tokens per source (shared with the other
	// admin routes of the server); nil makes one.
	Guesses *inspect.Guesses
	// ReadOnly guards the data routes (GET only, the inspect token): the
	// engine's own on an instance. nil allows every GET.
	ReadOnly func(http.HandlerFunc) http.HandlerFunc
	// PollEvery is the stream's period without a feed (default 1 s).
	PollEvery time.Duration
	Logger    *slog.Logger
}

// Dashboard serves the panels.
type Dashboard struct {
	c Config
	// base bounds the reads shared by every page; Close ends it.
	base   context.Context
	stop   context.CancelFunc
	panels map[string]*panelTopic
	hubs   map[string]*hub
	lazy   *lazyFeed // OpenFeed's, nil without one
}

// New checks c and returns the dashboard; Close stops its stream.
func New(c Config) (*Dashboard, error) {
	if c.Store == nil {
		return nil, errs.New(errs.CodeInvalidArgument, "dashboard: no store")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Guesses == nil {
		c.Guesses = inspect.NewGuesses(c.Logger)
	}
	if c.PollEvery <= 0 {
		c.PollEvery = time.Second
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 10 * time.Second
	}
	if c.ReadOnly == nil {
		c.ReadOnly = ReadOnly("")
	}
	d := &Dashboard{c: c}
	d.base, d.stop = context.WithCancel(context.Background())
	if c.Feed == nil && c.OpenFeed != nil {
		d.lazy = &lazyFeed{open: c.OpenFeed, base: d.base, log: c.Logger}
	}
	d.panels = d.topics()
	d.hubs = map[string]*hub{topicWorkflows: newHub(d.source(), c.Logger)}
	for name, p := range d.panels {
		d.hubs[name] = newHub(d.panelSource(p), c.Logger)
	}
	return d, nil
}

// Close ends the open event streams and the reads they share.
func (d *Dashboard) Close() {
	for _, h := range d.hubs {
		h.close()
	}
	if d.lazy != nil {
		d.lazy.close()
	}
	d.stop()
}

// Routes adds the dashboard's routes to mux.
func (d *Dashboard) Routes(mux *http.ServeMux) {
	static, _ := fs.Sub(uiFiles, "ui")
	files := http.StripPrefix(Prefix, http.FileServer(http.FS(static)))
	// The page itself holds no data: a browser loads it without a token
	// (it cannot send one on navigation); every read below needs it.
	mux.HandleFunc("GET "+Prefix, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
		w.Header().Set("X-Frame-Options", "DENY")
		files.ServeHTTP(w, r)
	})
	api := Prefix + "api/"
	ro := d.c.ReadOnly
	mux.HandleFunc("GET "+api+"cluster", ro(d.panels[topicCluster].snap.serve))
	mux.HandleFunc("GET "+api+"runs", ro(d.runs))
	mux.HandleFunc("GET "+api+"runs/{id}", ro(d.run))
	mux.HandleFunc("GET "+api+"schedules", ro(d.panels[topicSchedules].snap.serve))
	mux.HandleFunc("GET "+api+"messages", ro(d.panels[topicMessages].snap.serve))
	mux.HandleFunc("GET "+api+"logs", ro(d.panels[topicLogs].snap.serve))
	mux.HandleFunc("GET "+api+"stream", ro(d.stream))
	mux.HandleFunc("POST "+api+"runs/{id}/cancel", d.admin(d.cancel))
	mux.HandleFunc("POST "+api+"runs/{id}/signal", d.admin(d.signal))
	mux.HandleFunc("POST "+api+"messages/{id}/replay", d.admin(d.replay))
	mux.HandleFunc("POST "+api+"backlog/dead", d.admin(d.deadBacklog))
}

// Handler is a mux holding only the dashboard (for `voltro dashboard`):
// / redirects to it.
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	d.Routes(mux)
	mux.Handle("GET /{$}", http.RedirectHandler(Prefix, http.StatusFound))
	return mux
}

// ReadOnly is the inspect routes' guard for a dashboard outside an
// instance: GET or HEAD only, and, when token is set, its bearer.
func ReadOnly(token string) func(http.HandlerFunc) http.HandlerFunc {
	return func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "read-only endpoint: use GET"})
				return
			}
			if token != "" && !bearer(r, token) {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token (VOLTRO_INSPECT_TOKEN)"})
				return
			}
			h(w, r)
		}
	}
}

// admin guards an action: refused while no admin token is set, POST
// only, and the admin token in the Authorization header (never a cookie,
// so another site cannot make a browser send it).
func (d *Dashboard) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if d.c.AdminToken == "" {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": adminDisabledText})
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "admin action: use POST"})
			return
		}
		if retry, blocked := d.c.Guesses.Blocked(r); blocked {
			inspect.Refuse(w, retry)
			return
		}
		if !bearer(r, d.c.AdminToken) {
			d.c.Guesses.Wrong(r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="voltro admin"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong admin token: actions need Authorization: Bearer <VOLTRO_ADMIN_TOKEN>"})
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
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeErr answers err with the status of its voltro code.
func writeErr(w http.ResponseWriter, err error) {
	writeJSON(w, errs.HTTPStatus(err), map[string]string{"error": err.Error()})
}
