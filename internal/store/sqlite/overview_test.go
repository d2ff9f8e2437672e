package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestOverview(t *testing.T) {
	storetest.RunOverview(t, func(t *testing.T) store.Driver {
		return openTest(t, filepath.Join(t.TempDir(), "overview.db"))
	})
}
