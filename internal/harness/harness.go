package harness

// The setup voltrotest puts in New's context, and the parts New hands back.

import (
	"context"

	"github.com/voltro/voltro/internal/clock"
	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/workflow"
)

// Setup is what an App is built with instead of its defaults.
type Setup struct {
	Store store.Driver // used instead of opening DB_URL; the App does not close it
	Clock clock.Clock  // the engine's clock; nil is the wall clock
	// Attached receives the App's parts once New has built them.
	Attached func(Parts)
}

// Parts are the internals of one App.
type Parts struct {
	Engine *engine.Engine
	// Workflows attaches the workflow runtime on first use, as the App does.
	Workflows func() (*workflow.Engine, error)
}

type key struct{}

// With returns ctx carrying s for voltro.New.
func With(ctx context.Context, s *Setup) context.Context {
	return context.WithValue(ctx, key{}, s)
}

// From returns the setup ctx carries, or nil.
func From(ctx context.Context) *Setup {
	s, _ := ctx.Value(key{}).(*Setup)
	return s
}
