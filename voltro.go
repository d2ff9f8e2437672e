package voltro

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/voltro/voltro/changes"
	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/harness"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/observe/serve"
	"github.com/voltro/voltro/internal/schedule"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/workflow"
)

// App is one voltro instance.
type App struct {
	e     *engine.Engine
	wf    *workflow.Engine
	sched *schedule.Scheduler
	feed  *cdc.Feed
	pub   *changes.Feed // feed as users see it (App.Changes)
	// replicas watches for other live instances with this replica id
	// (clustered only).
	replicas *replicaWatch
	// schedDefault is VOLTRO_SCHEDULE_COORDINATION, validated at New.
	schedDefault schedule.Coordination
	started      bool
	log          *slog.Logger
	ring         *observe.Ring // the recent log records inspect serves
	mu           sync.Mutex
	hooks        []func(ctx context.Context) error // run at Start, after the engine serves
	closes       []func(ctx context.Context) error // run at Close, before the engine leaves
}

type appOptions struct {
	config *Config // WithConfig, laid over env
	dbURL  string
	env    func(string) string
	logger *slog.Logger
	store  store.Driver
	tracer trace.TracerProvider
}

// Option configures New.
type Option func(*appOptions)

// WithDB sets the database URL instead of DB_URL (postgres://, mariadb://,
// mysql://, sqlite:<file> or a .db path, memory:).
func WithDB(url string) Option { return func(o *appOptions) { o.dbURL = url } }

// WithEnv reads configuration from env instead of the process environment
// (WithConfig's fields still come first).
func WithEnv(env func(string) string) Option { return func(o *appOptions) { o.env = env } }

// WithLogger sets the structured logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *appOptions) { o.logger = l } }

// WithTracerProvider traces workflow runs, steps, message deliveries and
// schedule firings with tp (default: no tracing; the global provider is
// never used).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *appOptions) { o.tracer = tp }
}

// New resolves the configuration, opens and migrates the store and checks
// the cluster configuration. Register entity types, workflows and schedules,
// then Start.
func New(ctx context.Context, opts ...Option) (*App, error) {
	o, cfg, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	coord, err := schedule.DefaultCoordinationFromEnv(o.env)
	if err != nil {
		return nil, err
	}
	// Every record passes through the ring, Debug included, whatever the
	// app's handler prints.
	ring := observe.NewRing(cfg.ReplicaID, observe.DefaultRingSize, slog.LevelDebug)
	o.logger = slog.New(observe.NewHandler(o.logger.Handler(), ring))
	tel := observe.New(o.tracer, cfg.ReplicaID)
	a := &App{log: o.logger, ring: ring, schedDefault: coord}
	eo := engine.Options{Config: cfg, Store: o.store, Open: open.Open, Logger: o.logger, Telemetry: tel, Facts: a.facts()}
	h := harness.From(ctx) // the test environment's store and clock
	if h != nil {
		eo.Store, eo.Clock = h.Store, h.Clock
	}
	e, err := engine.New(ctx, eo)
	if err != nil {
		return nil, err
	}
	a.e = e
	if h != nil && h.Attached != nil {
		h.Attached(harness.Parts{Engine: e, Workflows: a.workflows})
	}
	if err := a.serveObservability(); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	if err := a.openFeed(ctx, cfg, o.env); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	if err := a.serveDashboard(); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	a.watchReplicaID()
	return a, nil
}

// Start joins the cluster (or starts the single-process engine) and serves
// the runner and inspect endpoints. It returns once the instance runs.
func (a *App) Start(ctx context.Context) error {
	if err := a.e.Start(ctx); err != nil {
		return err
	}
	a.mu.Lock()
	a.started = true
	hooks := a.hooks
	a.mu.Unlock()
	for _, h := range hooks {
		if err := h(ctx); err != nil {
			_ = a.e.Close(ctx)
			return err
		}
	}
	a.bootLine()
	return nil
}

// serveObservability adds the log, metrics and admin routes to the inspect
// server.
func (a *App) serveObservability() error {
	return serve.Install(serve.Config{
		Engine: a.e, Ring: a.ring, Telemetry: a.e.Telemetry(), Schedules: a.ScheduleStats, Logger: a.log,
		CancelWorkflow: func(ctx context.Context, id string) error {
			wf, err := a.workflows()
			if err != nil {
				return err
			}
			return wf.Cancel(ctx, id)
		},
		IntrospectionDropped: func() int64 {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.wf == nil {
				return 0
			}
			return a.wf.Dropped()
		},
	})
}

// bootLine logs who this instance is and how it coordinates, then ends the
// boot records the log ring keeps apart.
func (a *App) bootLine() {
	coord := a.coordination()
	if coord == "" {
		coord = "none"
	}
	cfg := a.e.Config()
	// The message carries every value once, readable as it stands; the
	// attributes add only what it does not say (the record's replicaId field
	// names the instance for machines).
	a.log.Info(fmt.Sprintf("voltro started: replica=%s runner=%s dialect=%s tier=%s cdc=%s coordination=%s inspect=%s",
		cfg.ReplicaID, a.e.Address(), a.e.Store().Dialect(), a.e.Tier(), a.feed.Flavor(), coord, a.e.InspectAddr()),
		"version", engine.Version)
	a.ring.EndBoot()
}

// MetricsRegistry is this instance's Prometheus registry, served at
// /_voltro/metrics on the inspect address; add the app's own collectors to it.
func (a *App) MetricsRegistry() *prometheus.Registry { return a.e.Telemetry().Registry() }

// Close leaves the cluster gracefully: running handlers finish (bounded by
// ctx), shards are released for the survivors, and the store is closed.
// When the database does not answer (a paused or unreachable node), Close
// does not wait on it shard by shard: it stops every handler at once and
// leaves the shards' locks to expire.
func (a *App) Close(ctx context.Context) error {
	for i := len(a.closes) - 1; i >= 0; i-- {
		_ = a.closes[i](ctx)
	}
	err := a.e.Close(ctx)
	if a.wf != nil {
		a.wf.Close()
	}
	return err
}

// workflows attaches the workflow engine on first use.
func (a *App) workflows() (*workflow.Engine, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.wf == nil {
		a.wf = workflow.New(a.e)
	}
	return a.wf, nil
}

// Run starts the app, blocks until ctx ends, then closes it.
func (a *App) Run(ctx context.Context) error {
	if err := a.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return a.Close(context.WithoutCancel(ctx))
}

// Registrable is anything App.Register accepts: entity types, workflows,
// schedules.
type Registrable interface {
	register(a *App) error
}

// Register adds entity types (and, as they come, workflows and schedules).
// It may be called before or after Start; a type registered late has its
// backlog read at once.
func (a *App) Register(items ...Registrable) error {
	for _, it := range items {
		if err := it.register(a); err != nil {
			return err
		}
	}
	return nil
}

// Logger is the app's logger.
func (a *App) Logger() *slog.Logger { return a.log }

// InspectAddr is where the inspect and health endpoints listen (after Start).
func (a *App) InspectAddr() string { return a.e.InspectAddr() }

// DB is the application pool of a SQL store (PostgreSQL, MariaDB/MySQL,
// SQLite) as database/sql, and the dialect name. The memory store has none.
func (a *App) DB() (*sql.DB, string, error) {
	d := a.e.Store()
	db := d.Capabilities().SQL
	if db == nil {
		return nil, string(d.Dialect()), NewError(CodeUnavailable, "the %s store has no SQL handle", d.Dialect())
	}
	return db, string(d.Dialect()), nil
}

// Shards reports how many shards this instance holds and how many the
// cluster has.
func (a *App) Shards() (owned, total int) {
	cfg := a.e.Config()
	return len(a.e.Runner().Held()), cfg.ShardCount * len(cfg.Groups)
}

// ShardOwners reads the shard ledger: every shard with a live owner, mapped
// to that runner's address, and the shard count per group.
func (a *App) ShardOwners(ctx context.Context) (map[string]string, int, error) {
	locks, err := a.e.Store().ShardLocks(ctx)
	if err != nil {
		return nil, 0, err
	}
	out := make(map[string]string, len(locks))
	for _, l := range locks {
		if l.Owner != "" && !l.Expired {
			out[l.Shard] = l.Owner
		}
	}
	return out, a.e.Config().ShardCount, nil
}

// resolve applies opts over the defaults and resolves the configuration the
// way New and NewClient share: WithDB over a set Config field over the
// environment over the default.
func resolve(opts []Option) (appOptions, config.Config, error) {
	o := appOptions{env: os.Getenv}
	for _, f := range opts {
		f(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.config != nil {
		o.env = o.config.over(o.env)
	}
	cfg, err := config.FromEnv(o.env, o.dbURL)
	return o, cfg, err
}
