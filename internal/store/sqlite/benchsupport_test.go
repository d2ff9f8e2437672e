package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestBenchSupport(t *testing.T) {
	storetest.RunBenchSupport(t, func(t *testing.T, now func() time.Time) store.Driver {
		return openClock(t, filepath.Join(t.TempDir(), "bench.db"), now)
	})
}
