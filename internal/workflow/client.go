package workflow

// A client: the workflow engine of a process that only starts, signals,
// cancels and reads runs. It opens the store directly (without the SQLite
// ownership guard a running instance holds), hosts nothing, registers no
// runner and takes no shard: the owners pick its starts up from the
// database, woken by NOTIFY or by runner RPC to the owner the ledger names.

import (
	"context"
	"log/slog"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/store/open"
)

// OpenClient opens and migrates the store of cfg and returns a client
// workflow engine on it, and the function that closes both.
func OpenClient(ctx context.Context, cfg config.Config, log *slog.Logger) (*Engine, func(), error) {
	d, err := open.Open(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	e, err := engine.New(ctx, engine.Options{Config: cfg, Store: d, Logger: log, Client: true})
	if err != nil {
		_ = d.Close()
		return nil, nil, err
	}
	w := New(e)
	return w, func() {
		_ = e.Stop(context.Background())
		_ = w.Stop(context.Background())
		_ = d.Close()
	}, nil
}
