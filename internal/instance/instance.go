package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/clock"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/schedule"
	"github.com/voltro/voltro/internal/service"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/workflow"
)

// Setup is what an instance is built with: what voltro.New's options set,
// and what the test environment sets besides.
type Setup struct {
	// DBURL overrides the configured database URL (WithDB).
	DBURL string
	// Env reads the environment (WithEnv); nil is the process's.
	Env config.Env
	// Settings lays the configuration set in code over the environment's
	// (WithConfig).
	Settings func(*config.Settings)
	Logger   *slog.Logger         // nil: slog.Default()
	Tracer   trace.TracerProvider // nil: no tracing

	// Store is used instead of opening the configured database; the
	// instance does not close it (the test environment's memory store).
	Store store.Driver
	// Clock decides when work becomes due; it is also the clock of a
	// store the instance opens. nil is the wall clock.
	Clock clock.Clock
	// Built receives the instance once New has built it (the test
	// environment drives its parts).
	Built func(*Instance)
}

// Resolve is the configuration s describes, with its logger: the
// environment's settings, the code's laid over them, WithDB over both.
func (s Setup) Resolve() (config.Config, *slog.Logger, error) {
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	set := config.FromEnvironment(s.Env)
	if s.Settings != nil {
		s.Settings(&set)
	}
	if s.DBURL != "" {
		set.DatabaseURL = s.DBURL
	}
	cfg, err := set.Resolve()
	return cfg, log, err
}

// Instance is one voltro instance: its parts, and the order they run in.
type Instance struct {
	Engine    *engine.Engine
	Workflows *workflow.Engine
	Scheduler *schedule.Scheduler
	Feed      *cdc.Feed
	Log       *slog.Logger
	Ring      *observe.Ring // the recent log records inspect serves

	replicas *replicaWatch // nil unless clustered
	// parts in start order; stopped in reverse.
	parts    []service.Service
	stopOnce sync.Once
	stopErr  error
}

// New resolves the configuration, opens and migrates the store, checks the
// cluster configuration and builds every part. Nothing runs until Start.
func New(ctx context.Context, s Setup) (*Instance, error) {
	cfg, log, err := s.Resolve()
	if err != nil {
		return nil, err
	}
	// Every record passes through the ring, Debug included, whatever the
	// app's handler prints.
	ring := observe.NewRing(cfg.ReplicaID, observe.DefaultRingSize, slog.LevelDebug)
	log = slog.New(observe.NewHandler(log.Handler(), ring))
	in := &Instance{Log: log, Ring: ring}
	if s.Clock != nil && s.Store == nil {
		ctx = clock.WithStore(ctx, s.Clock) // the store opened here reads it
	}
	e, err := engine.New(ctx, engine.Options{
		Config: cfg, Store: s.Store, Open: open.Open, Logger: log, Clock: s.Clock,
		Telemetry: observe.New(s.Tracer, cfg.ReplicaID), Facts: in.facts(),
	})
	if err != nil {
		return nil, err
	}
	in.Engine = e
	in.Workflows = workflow.New(e)
	var dash *dashboard.Dashboard
	build := []func() error{
		in.serveObservability,
		func() (err error) { in.Feed, err = openFeed(ctx, cfg, e, log); return err },
		func() (err error) { dash, err = serveDashboard(e, in.Feed, in.Workflows, log); return err },
		func() (err error) { in.Scheduler, err = newScheduler(cfg, e, in.Workflows, log); return err },
	}
	for _, b := range build {
		if err := b(); err != nil {
			return nil, errors.Join(err, in.stopBuilt(ctx))
		}
	}
	var watch service.Service
	if cfg.Clustered() {
		in.replicas = &replicaWatch{}
		watch = service.NewLoop(func(ctx context.Context) error { in.watchReplicaID(ctx); return nil })
	}
	in.parts = nonNil(
		in.Workflows.Service(), // stops after the engine: its handlers write through it
		e,
		service.Funcs{OnStart: in.Feed.Start, OnStop: func(context.Context) error { return in.Feed.Close() }},
		service.Funcs{OnStop: func(context.Context) error { dash.Close(); return nil }},
		watch,
		in.Scheduler,
	)
	if s.Built != nil {
		s.Built(in)
	}
	return in, nil
}

// stopBuilt stops what a New that failed half-way had built.
func (in *Instance) stopBuilt(ctx context.Context) error {
	var parts []service.Service
	if in.Workflows != nil {
		parts = append(parts, in.Workflows.Service())
	}
	parts = append(parts, in.Engine)
	if in.Feed != nil {
		parts = append(parts, service.Funcs{OnStop: func(context.Context) error { return in.Feed.Close() }})
	}
	return service.StopAll(ctx, parts...)
}

func nonNil(parts ...service.Service) []service.Service {
	var out []service.Service
	for _, p := range parts {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Start starts the parts in order and logs the boot line. When one fails,
// every part is stopped and the error returned.
func (in *Instance) Start(ctx context.Context) error {
	for _, p := range in.parts {
		if err := p.Start(ctx); err != nil {
			return errors.Join(err, in.Stop(ctx))
		}
	}
	in.bootLine()
	return nil
}

// Stop stops every part in reverse order, bounded by ctx, and returns their
// errors joined; a part never started releases what New acquired. A
// second Stop returns the first one's result.
func (in *Instance) Stop(ctx context.Context) error {
	in.stopOnce.Do(func() { in.stopErr = service.StopAll(ctx, in.parts...) })
	return in.stopErr
}

// bootLine logs who this instance is and how it coordinates, then ends the
// boot records the log ring keeps apart.
func (in *Instance) bootLine() {
	e := in.Engine
	cfg := e.Config()
	// The message carries every value once, readable as it stands; the
	// attributes add only what it does not say (the record's replicaId field
	// names the instance for machines).
	in.Log.Info(fmt.Sprintf("voltro started: replica=%s runner=%s dialect=%s tier=%s cdc=%s coordination=%s inspect=%s",
		cfg.ReplicaID, e.Address(), e.Store().Dialect(), e.Tier(), in.Feed.Flavor(), orNone(in.coordination()), e.InspectAddr()),
		"version", engine.Version)
	in.Ring.EndBoot()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
