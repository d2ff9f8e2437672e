package mysql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestBacklogMariaDB(t *testing.T) {
	storetest.RunBacklog(t, func(t *testing.T, now func() time.Time) store.Driver {
		s, _ := fresh(t, "mybacklog", clocked(now))
		return s
	})
}

func TestBacklogMySQLDialect(t *testing.T) {
	storetest.RunBacklog(t, func(t *testing.T, now func() time.Time) store.Driver {
		return freshURL(t, "mysql://"+strings.TrimPrefix(testdb.MariaDB(t, "mybacklog_my"), "mariadb://"), clocked(now))
	})
}

func TestBacklogGalera(t *testing.T) {
	storetest.RunBacklog(t, func(t *testing.T, now func() time.Time) store.Driver {
		return freshURL(t, testdb.Galera(t)[0], clocked(now))
	})
}
