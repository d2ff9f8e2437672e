package mysql_test

import (
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestBacklogMariaDB(t *testing.T) {
	storetest.RunBacklog(t, func(t *testing.T) store.Driver {
		s, _ := fresh(t, "mybacklog", quiet)
		return s
	})
}

func TestBacklogMySQLDialect(t *testing.T) {
	storetest.RunBacklog(t, func(t *testing.T) store.Driver {
		return freshURL(t, "mysql://"+strings.TrimPrefix(testdb.MariaDB(t, "mybacklog_my"), "mariadb://"), quiet)
	})
}

func TestBacklogGalera(t *testing.T) {
	storetest.RunBacklog(t, func(t *testing.T) store.Driver {
		return freshURL(t, testdb.Galera(t)[0], quiet)
	})
}
