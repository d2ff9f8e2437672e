package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestBacklog(t *testing.T) {
	storetest.RunBacklog(t, func(t *testing.T, now func() time.Time) store.Driver {
		return openClock(t, filepath.Join(t.TempDir(), "backlog.db"), now)
	})
}
