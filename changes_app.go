package voltro

// The app's change feed: writes through it (or through anything else that
// writes the database, on PostgreSQL and MariaDB) become change events on
// every instance. See package changes and docs/reactivity.md.

import (
	"context"

	"github.com/voltro/voltro/changes"
	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/cdc/cdcpub"
	"github.com/voltro/voltro/internal/config"
)

// Changes is this instance's change feed (package changes): Subscribe,
// Insert/Update/Delete/Tx, SSEHandler. It starts with the app.
func (a *App) Changes() *changes.Feed { return a.pub }

// openFeed creates the feed at New (the boot log names its transport) and
// starts it with the app, sharing the store's pool where there is one.
func (a *App) openFeed(ctx context.Context, cfg config.Config, env func(string) string) error {
	url := cfg.DB.URL
	if url == "" {
		url = "memory:"
	}
	fc := cdc.Config{URL: url, Dialect: string(cfg.DB.Dialect), ReplicaID: cfg.ReplicaID, DisableCDC: !cfg.CDC,
		ReplicationURL: env("VOLTRO_CDC_URL"), Logger: a.log}
	fc.DB = a.e.Store().Capabilities().SQL
	f, err := cdc.New(ctx, fc)
	if err != nil {
		return err
	}
	a.feed = f // inspect reports its flavor and problem (facts.go)
	a.pub = cdcpub.Wrap(f).(*changes.Feed)
	a.hooks = append(a.hooks, func(ctx context.Context) error { return f.Start(ctx) })
	a.closes = append(a.closes, func(context.Context) error { return f.Close() })
	return nil
}
