package mysql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestOverviewMariaDB(t *testing.T) {
	storetest.RunOverview(t, func(t *testing.T, now func() time.Time) store.Driver {
		s, _ := fresh(t, "myov", clocked(now))
		return s
	})
}

func TestOverviewMySQLDialect(t *testing.T) {
	storetest.RunOverview(t, func(t *testing.T, now func() time.Time) store.Driver {
		return freshURL(t, "mysql://"+strings.TrimPrefix(testdb.MariaDB(t, "myov_my"), "mariadb://"), clocked(now))
	})
}
