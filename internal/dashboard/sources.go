package dashboard

// Where the Cluster and Logs panels read from, built once from the
// configuration an instance or `voltro dashboard` already has.

import (
	"context"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/observe/cli"
	"github.com/voltro/voltro/internal/status"
	"github.com/voltro/voltro/internal/store"
)

// Sources fills c.Cluster and c.Logs to read d's cluster as `voltro
// cluster status` and `voltro logs` do with cfg (the runners table of a
// shared SQL store, the local registry directory otherwise; the inspect
// token sent to trusted hosts only).
func Sources(c *Config, d store.Driver, cfg config.Config) {
	so := status.Options{Store: d, Dialect: string(cfg.DB.Dialect), Database: cfg.DB.Database, RegistryDir: cfg.RegistryDir,
		Heartbeat: cfg.Heartbeat, InspectToken: cfg.InspectToken, InspectTrust: cfg.InspectTrust, Logger: c.Logger}
	c.Cluster = func(ctx context.Context) (*status.Report, error) {
		rep, _, err := status.Collect(ctx, so)
		return rep, err
	}
	c.Logs = &cli.LogsOptions{Store: d, Dialect: so.Dialect, Database: cfg.DB.Database, RegistryDir: cfg.RegistryDir,
		InspectToken: cfg.InspectToken, InspectTrust: cfg.InspectTrust}
	c.Heartbeat = cfg.Heartbeat
}
