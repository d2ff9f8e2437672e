package mysql_test

import (
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestAcquireManyMariaDB(t *testing.T) {
	var url string
	storetest.RunAcquireMany(t, func(t *testing.T, now func() time.Time) store.Driver {
		var s *mysql.Store
		s, url = fresh(t, "mymany", clocked(now))
		return s
	}, storetest.Options{Reopen: func(t *testing.T, _ store.Driver, now func() time.Time) store.Driver {
		return open(t, url, clocked(now))
	}})
}
