package voltro

// The app's change feed: writes through it (or through anything else that
// writes the database, on PostgreSQL and MariaDB) become change events on
// every instance. See package changes and docs/reactivity.md.

import (
	"github.com/voltro/voltro/changes"
)

// Changes is this instance's change feed (package changes): Subscribe,
// Insert/Update/Delete/Tx, SSEHandler. It starts with the app.
func (a *App) Changes() *changes.Feed { return a.pub }
