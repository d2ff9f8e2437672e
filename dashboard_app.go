package voltro

// The dashboard every instance serves at /_voltro/ui/ on its inspect
// server (internal/dashboard), with the inspect routes' bind and token.

import (
	"context"
	"net/http"

	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/workflow"
)

// serveDashboard adds the dashboard's routes; call after openFeed.
func (a *App) serveDashboard() error {
	e := a.e
	cfg := e.Config()
	c := dashboard.Config{Store: e.Store(), Feed: a.feed, AdminToken: cfg.AdminToken, Guesses: e.AdminGuesses(), ReadOnly: e.ReadOnly,
		Wake: e.WakeShard, Logger: a.log,
		Workflows: func(context.Context) (*workflow.Engine, error) { return a.workflows() }}
	dashboard.Sources(&c, e.Store(), cfg)
	d, err := dashboard.New(c)
	if err != nil {
		return err
	}
	e.HandleHTTP(func(mux *http.ServeMux) { d.Routes(mux) })
	a.closes = append(a.closes, func(context.Context) error { d.Close(); return nil })
	return nil
}
