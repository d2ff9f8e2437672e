package instance

// The parts beside the engine, each built by New: the observability
// routes, the change feed, the dashboard and the scheduler.

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/observe/serve"
	"github.com/voltro/voltro/internal/schedule"
	"github.com/voltro/voltro/internal/workflow"
)

// serveObservability adds the log, metrics and admin routes to the inspect
// server.
func (in *Instance) serveObservability() error {
	e := in.Engine
	return serve.Install(serve.Config{
		Engine: e, Ring: in.Ring, Telemetry: e.Telemetry(), Schedules: in.ScheduleStats, Logger: in.Log,
		CancelWorkflow:       in.Workflows.Cancel,
		IntrospectionDropped: in.Workflows.Dropped,
	})
}

// ScheduleStats counts firings per schedule and outcome on this instance.
func (in *Instance) ScheduleStats() map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for name, m := range in.Scheduler.Stats() {
		out[name] = map[string]int64{}
		for o, n := range m {
			out[name][string(o)] = n
		}
	}
	return out
}

// openFeed creates the change feed (the boot log names its transport),
// sharing the store's pool where there is one; it runs from Start.
func openFeed(ctx context.Context, cfg config.Config, e *engine.Engine, log *slog.Logger) (*cdc.Feed, error) {
	url := cfg.DB.URL
	if url == "" {
		url = "memory:"
	}
	return cdc.New(ctx, cdc.Config{
		URL: url, Dialect: string(cfg.DB.Dialect), ReplicaID: cfg.ReplicaID, DisableCDC: !cfg.CDC,
		ReplicationURL: cfg.CDCURL, Logger: log, DB: e.Store().Capabilities().SQL,
	})
}

// serveDashboard builds the dashboard every instance serves at
// /_voltro/ui/ on its inspect server, with the inspect routes' bind and
// token.
func serveDashboard(e *engine.Engine, feed *cdc.Feed, wf *workflow.Engine, log *slog.Logger) (*dashboard.Dashboard, error) {
	cfg := e.Config()
	c := dashboard.Config{Store: e.Store(), Feed: feed, AdminToken: cfg.AdminToken, Guesses: e.AdminGuesses(), ReadOnly: e.ReadOnly,
		Wake: e.WakeShard, Logger: log,
		Workflows: func(context.Context) (*workflow.Engine, error) { return wf, nil }}
	dashboard.Sources(&c, e.Store(), cfg)
	d, err := dashboard.New(c)
	if err != nil {
		return nil, err
	}
	e.HandleHTTP(func(mux *http.ServeMux) { d.Routes(mux) })
	return d, nil
}

// newScheduler builds the scheduler; it fires nothing until a schedule is
// registered.
func newScheduler(cfg config.Config, e *engine.Engine, wf *workflow.Engine, log *slog.Logger) (*schedule.Scheduler, error) {
	sc := schedule.Config{ReplicaID: cfg.ReplicaID, Store: schedule.StoreOf(e.Store()), Default: schedule.Coordination(cfg.ScheduleCoordination), Logger: log, Clock: e.Clock()}
	if cfg.Clustered() {
		sc.Cluster = wf
	}
	return schedule.New(sc)
}
