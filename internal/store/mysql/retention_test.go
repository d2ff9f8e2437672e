package mysql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestRetentionMariaDB(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T, now func() time.Time) store.Driver {
		s, _ := fresh(t, "myret", clocked(now))
		return s
	})
}

func TestRetentionMySQLDialect(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T, now func() time.Time) store.Driver {
		return freshURL(t, "mysql://"+strings.TrimPrefix(testdb.MariaDB(t, "myret_my"), "mariadb://"), clocked(now))
	})
}

// retentionSpread is one store made of handles on three Galera nodes:
// locks and messages on node 0, runs on node 1, introspection on node 2,
// and the sweeps on node 2 too, so every delete is certified against
// writes made on other nodes.
type retentionSpread struct {
	store.Driver
	store.WorkflowStore
	store.WorkflowIntrospection
	store.BacklogStore
	store.Sweeper
}

func TestRetentionGalera(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T, now func() time.Time) store.Driver {
		urls := testdb.Galera(t)
		runs := open(t, urls[1], clocked(now))
		other := open(t, urls[2], clocked(now))
		return retentionSpread{freshURL(t, urls[0], clocked(now)), runs, other, runs, other}
	})
}
