package voltro

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/voltro/voltro/changes"
	"github.com/voltro/voltro/internal/cdc/cdcpub"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/instance"
	"github.com/voltro/voltro/internal/workflow"
)

// App is one voltro instance: the public face of the parts
// internal/instance assembles.
type App struct {
	in  *instance.Instance
	e   *engine.Engine // in.Engine
	pub *changes.Feed  // in.Feed as users see it (App.Changes)
	log *slog.Logger
}

// appOptions is what the options set: internal/instance's Setup, where the
// test environment (voltrotest) also sets its store and clock.
type appOptions = instance.Setup

// Option configures New.
type Option func(*appOptions)

// WithDB sets the database URL instead of DB_URL (postgres://, mariadb://,
// mysql://, sqlite:<file> or a .db path, memory:).
func WithDB(url string) Option { return func(o *appOptions) { o.DBURL = url } }

// WithEnv reads configuration from env instead of the process environment
// (WithConfig's fields still come first).
func WithEnv(env func(string) string) Option { return func(o *appOptions) { o.Env = env } }

// WithLogger sets the structured logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *appOptions) { o.Logger = l } }

// WithTracerProvider traces workflow runs, steps, message deliveries and
// schedule firings with tp (default: no tracing; the global provider is
// never used).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *appOptions) { o.Tracer = tp }
}

// New resolves the configuration, opens and migrates the store and checks
// the cluster configuration. Register entity types, workflows and schedules,
// then Start.
func New(ctx context.Context, opts ...Option) (*App, error) {
	in, err := instance.New(ctx, setupOf(opts))
	if err != nil {
		return nil, err
	}
	return &App{in: in, e: in.Engine, pub: cdcpub.Wrap(in.Feed).(*changes.Feed), log: in.Log}, nil
}

// setupOf applies opts.
func setupOf(opts []Option) instance.Setup {
	var s instance.Setup
	for _, f := range opts {
		f(&s)
	}
	return s
}

// Start joins the cluster (or starts the single-process engine) and serves
// the runner and inspect endpoints. It returns once the instance runs.
func (a *App) Start(ctx context.Context) error { return a.in.Start(ctx) }

// MetricsRegistry is this instance's Prometheus registry, served at
// /_voltro/metrics on the inspect address; add the app's own collectors to it.
func (a *App) MetricsRegistry() *prometheus.Registry { return a.e.Telemetry().Registry() }

// Close leaves the cluster gracefully: running handlers finish (bounded by
// ctx), shards are released for the survivors, and the store is closed.
// When the database does not answer (a paused or unreachable node), Close
// does not wait on it shard by shard: it stops every handler at once and
// leaves the shards' locks to expire.
func (a *App) Close(ctx context.Context) error { return a.in.Stop(ctx) }

// workflows is the workflow runtime.
func (a *App) workflows() (*workflow.Engine, error) { return a.in.Workflows, nil }

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

// resolve applies opts and resolves the configuration the way New and
// NewClient share: WithDB over a set Config field over the environment
// over the default.
func resolve(opts []Option) (config.Config, *slog.Logger, error) {
	return setupOf(opts).Resolve()
}
