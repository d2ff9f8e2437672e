package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/voltro/voltro/internal/store/sqlite"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestRowSQL(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "voltro.db"))
	storetest.RowSQL(t, s.DB(), sqlite.RowDialect)
}
