package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestRetention(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T) store.Driver {
		return openTest(t, filepath.Join(t.TempDir(), "retention.db"))
	})
}
