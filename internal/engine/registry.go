package engine

// The local runtime registry entry: at Start the engine writes
// <replica>-<pid>.json into the registry directory (VOLTRO_REGISTRY_DIR,
// $XDG_RUNTIME_DIR/voltro or ~/.voltro/run) so `voltro cluster status` finds
// instances that the runners table of a single-process store cannot show
// to another process; the entry goes when the engine closes.

import (
	"context"
	"os"

	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/service"
)

// registerLocal writes the entry and returns the loop that removes it when
// the engine's loops stop (Close). A registry that cannot be written is
// logged, never fatal.
func (e *Engine) registerLocal() []service.Service {
	dir := e.cfg.RegistryDir
	if dir == "" {
		e.log.Warn("runtime registry: no directory (set VOLTRO_REGISTRY_DIR); voltro cluster status will not list this instance from the registry")
		return nil
	}
	host, _ := os.Hostname()
	dialect := string(e.d.Dialect())
	path, err := registry.Write(dir, registry.Entry{
		ReplicaID: e.cfg.ReplicaID, PID: os.Getpid(), Process: e.cfg.ProcessName, Host: host,
		Dialect: dialect, Database: registry.DatabaseKey(dialect, e.cfg.DB.Database),
		InspectAddr: e.InspectAddr(), RunnerAddress: e.address, Started: e.started,
	})
	if err != nil {
		e.log.Warn("runtime registry: writing this instance's entry failed", "err", err)
		return nil
	}
	e.log.Debug("runtime registry entry written", "path", path)
	return []service.Service{service.NewLoop(func(ctx context.Context) {
		<-ctx.Done()
		if err := registry.Remove(path); err != nil {
			e.log.Warn("runtime registry: removing this instance's entry failed", "err", err)
		}
	})}
}
