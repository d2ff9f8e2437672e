package postgres_test

import (
	"testing"

	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestRowSQL(t *testing.T) {
	s := open(t, testdb.Postgres(t, "pgrowsql"))
	storetest.RowSQL(t, s.DB(), postgres.RowDialect)
}
