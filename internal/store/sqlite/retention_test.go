package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestRetention(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T, now func() time.Time) store.Driver {
		return openClock(t, filepath.Join(t.TempDir(), "retention.db"), now)
	})
}
