package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestBenchSupport(t *testing.T) {
	storetest.RunBenchSupport(t, func(t *testing.T) store.Driver {
		return openTest(t, filepath.Join(t.TempDir(), "bench.db"))
	})
}
