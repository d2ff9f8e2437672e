package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestOverview(t *testing.T) {
	storetest.RunOverview(t, func(t *testing.T, now func() time.Time) store.Driver {
		return openClock(t, filepath.Join(t.TempDir(), "overview.db"), now)
	})
}
