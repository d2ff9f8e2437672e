package engine

// The local runtime registry entry: at Start the engine writes
// <replica>-<pid>.json into the registry directory (VOLTRO_REGISTRY_DIR,
// $XDG_RUNTIME_DIR/voltro or ~/.voltro/run) so `voltro cluster status` finds
// instances that the runners table of a single-process store cannot show
// to another process; the entry goes when the engine stops.

import (
	"context"
	"os"

	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/service"
)

// localEntry is the part that writes the entry at Start and removes it at
// Stop. A registry that cannot be written is logged, never fatal.
func (e *Engine) localEntry() service.Service {
	var path string
	return service.Funcs{
		OnStart: func(context.Context) error {
			path = e.writeLocal()
			return nil
		},
		OnStop: func(context.Context) error {
			if path == "" {
				return nil
			}
			if err := registry.Remove(path); err != nil {
				e.log.Warn("runtime registry: removing this instance's entry failed", "err", err)
			}
			path = ""
			return nil
		},
	}
}

// writeLocal writes the entry and returns its path, "" when there is none.
func (e *Engine) writeLocal() string {
	dir := e.cfg.RegistryDir
	if dir == "" {
		e.log.Warn("runtime registry: no directory (set VOLTRO_REGISTRY_DIR); voltro cluster status will not list this instance from the registry")
		return ""
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
		return ""
	}
	e.log.Debug("runtime registry entry written", "path", path)
	return path
}
