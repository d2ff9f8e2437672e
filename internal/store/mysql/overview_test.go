package mysql_test

import (
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestOverviewMariaDB(t *testing.T) {
	storetest.RunOverview(t, func(t *testing.T) store.Driver {
		s, _ := fresh(t, "myov", quiet)
		return s
	})
}

func TestOverviewMySQLDialect(t *testing.T) {
	storetest.RunOverview(t, func(t *testing.T) store.Driver {
		return freshURL(t, "mysql://"+strings.TrimPrefix(testdb.MariaDB(t, "myov_my"), "mariadb://"), quiet)
	})
}
