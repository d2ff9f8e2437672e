package cdc

// A watcher: a feed opened by a process that is not an application replica
// (`voltro watch`, in cmd/voltro) to follow one table's changes.

import (
	"context"

	"github.com/voltro/voltro/internal/cdc/delta"
)

// WatchConfig is a watcher's feed configuration from env (DB_URL,
// DB_DIALECT, POD_NAME, CDC, VOLTRO_CDC_URL). A watcher is not an
// application replica: it has its own id (and so its own server_id) and no
// stored binlog position.
func WatchConfig(env func(string) string) (Config, error) {
	cfg, err := ConfigFromEnv(env)
	if err != nil {
		return cfg, err
	}
	cfg.ReplicaID = "watch-" + Config{}.replicaID()
	cfg.Ephemeral = true
	return cfg, nil
}

// Watch opens a feed with cfg and passes every delta of table that passes
// filter to emit, until ctx ends or emit fails.
func Watch(ctx context.Context, cfg Config, table string, filter delta.Filter, emit func(delta.Delta) error) error {
	f, err := Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer f.Close()
	ch, err := f.Subscribe(ctx, table, filter)
	if err != nil {
		return err
	}
	if !f.Transport().CrossInstance() {
		f.log.Warn("this transport only sees writes made through this process: the watch will print nothing from other writers", "cdc", f.Flavor())
	}
	for d := range ch {
		if err := emit(d); err != nil {
			return err
		}
	}
	return nil
}
