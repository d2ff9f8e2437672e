package mysql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestBenchSupportMariaDB(t *testing.T) {
	storetest.RunBenchSupport(t, func(t *testing.T, now func() time.Time) store.Driver {
		s, _ := fresh(t, "mybench", clocked(now))
		return s
	})
}

func TestBenchSupportMySQLDialect(t *testing.T) {
	storetest.RunBenchSupport(t, func(t *testing.T, now func() time.Time) store.Driver {
		return freshURL(t, "mysql://"+strings.TrimPrefix(testdb.MariaDB(t, "mybench_my"), "mariadb://"), clocked(now))
	})
}
