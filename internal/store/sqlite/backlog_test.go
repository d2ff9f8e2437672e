package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestBacklog(t *testing.T) {
	storetest.RunBacklog(t, func(t *testing.T) store.Driver {
		return openTest(t, filepath.Join(t.TempDir(), "backlog.db"))
	})
}
