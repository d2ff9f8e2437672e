package engine

// The engine's lifecycle: its parts, built at New, started in order by
// Start and stopped in reverse by Stop. Stopping reverses the start:
// the loops end together, the runner leaves the cluster (shards drained
// and released, its row removed), the shards' handlers stop, the runner
// port and the inspect server shut down, the reply waiters are failed,
// and last the store is closed if the engine opened it.

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/service"
)

// newParts lists the engine's parts in start order.
func (e *Engine) newParts() *service.Sequence {
	var runnerPort service.Service
	if e.cfg.Clustered() {
		runnerPort = service.Funcs{
			OnStart: func(context.Context) error { return e.listenRPC() },
			OnStop:  func(ctx context.Context) error { return shutdown(ctx, e.rpcServer) },
		}
	}
	loops := []service.Service{e.localEntry(), e.deliv, e.runner}
	if e.sweeper != nil {
		loops = append(loops, e.sweeper)
	}
	if wl := e.d.Capabilities().Wakes; wl != nil {
		loops = append(loops, service.NewLoop(func(ctx context.Context) error {
			if err := wl.ListenWakes(ctx, e.onWake); err != nil && ctx.Err() == nil {
				// not a failure of the instance: polling takes over
				e.log.Warn("wake listener stopped; falling back to polling", "err", err)
			}
			return nil
		}))
	}
	e.loops = service.NewGroup(loops...)
	return service.NewSequence(
		service.Funcs{OnStop: func(context.Context) error { e.failWaiters(); return nil }},
		service.Funcs{
			OnStart: func(context.Context) error {
				if err := e.listenInspect(); err != nil {
					return err
				}
				e.runner.SetInspectAddr(e.InspectAddr())
				return nil
			},
			OnStop: func(ctx context.Context) error { return shutdown(ctx, e.httpServer) },
		},
		runnerPort,
		service.Funcs{OnStop: func(context.Context) error { e.deliv.StopShards(5 * time.Second); return nil }},
		service.Funcs{OnStop: func(ctx context.Context) error { e.runner.Leave(ctx); return nil }},
		e.loops,
	)
}

// shutdown shuts srv down gracefully within ctx; the connections still open
// when ctx ends are closed. A grace that runs out is the caller's bound,
// not an error.
func shutdown(ctx context.Context, srv *http.Server) error {
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil && ctx.Err() != nil {
		return srv.Close()
	}
	return err
}

// Start listens and starts the loops. It returns once the instance serves.
func (e *Engine) Start(ctx context.Context) error {
	if e.clientOnly {
		return errs.New(errs.CodeInvalidArgument, "a client engine hosts nothing and never starts")
	}
	e.started = time.Now()
	return e.parts.Start(ctx)
}

// Stop leaves the cluster gracefully (see the top of this file), bounded
// by ctx: entities stop, shards are released, the runner row removed,
// then the store is closed (if the engine opened it). It returns what
// went wrong on the way; a second Stop returns nil.
func (e *Engine) Stop(ctx context.Context) error {
	var err error
	e.stopOnce.Do(func() {
		e.mu.Lock()
		e.stopBG() // under mu: AfterCommit adds no watcher after this
		e.mu.Unlock()
		e.watchers.Wait()
		err = e.parts.Stop(ctx) // nothing when never started
		if e.ownsStore {
			err = errors.Join(err, e.d.Close())
		}
		e.releaseOwnership()
	})
	return err
}
