// The conformance suite on the real server, in the three forms the store
// takes: MariaDB (multi-statement batches, RETURNING), the mysql dialect
// with statements sent one by one (what MySQL 8 has: LastInsertId instead
// of RETURNING), and a 3-node Galera cluster in row mode with each group of
// the store on a different node.
package mysql_test

import (
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

// txLevels are the isolation levels the transactional cases commit and
// roll back under.
var txLevels = []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable}

// conformance runs the suite on databases named prefix1, prefix2, …,
// opened as url(name) turns testdb's MariaDB URL into the form under test.
func conformance(t *testing.T, prefix string, url func(string) string) {
	var n atomic.Int32
	var where storetest.Where[string] // each store's database name
	var urls storetest.Where[string]  // and the URL it was opened on
	storetest.Exercise(t, func(t *testing.T, now func() time.Time) store.Driver {
		name := fmt.Sprintf("%s%d", prefix, n.Add(1))
		u := url(testdb.MariaDB(t, name))
		s := freshURL(t, u, clocked(now))
		urls.Remember(s, u)
		return where.Remember(s, name)
	}, storetest.Options{
		Reopen: func(t *testing.T, d store.Driver, now func() time.Time) store.Driver {
			return open(t, urls.Of(d), clocked(now))
		},
		Modes: []store.LockMode{store.LockRow, store.LockAdvisory},
		Tx: storetest.TxOptions{
			Pool: func(t *testing.T, d store.Driver) *sql.DB { return userPool(t, where.Of(d)) },
			Bare: func(t *testing.T) *sql.DB {
				testdb.MariaDB(t, prefix+"bare")
				return userPool(t, prefix+"bare")
			},
			Levels:            txLevels,
			AwaitSeesRollback: true,
		},
	})
}

func TestConformanceMariaDB(t *testing.T) {
	conformance(t, "mysuite", func(u string) string { return u })
}

// The mysql dialect keeps to what MySQL 8 has: LastInsertId instead of
// INSERT … RETURNING. Run against the same server, and with multi-statement
// queries off, it covers those paths (and Complete as a plain transaction).
func TestConformanceMySQLDialect(t *testing.T) {
	conformance(t, "mysuite_my", func(u string) string {
		return "mysql://" + strings.TrimPrefix(u, "mariadb://") + "?multiStatements=false"
	})
}

// spread is one store made of handles on three Galera nodes: the cluster
// group, messages, schedules and overviews on node 0, workflow runs (and
// start batches) and backlogs on node 1, introspection and retention's
// sweeps on node 2, so every write of one group is certified against the
// writes of another made elsewhere. node0's methods sit one level deeper
// than the embedded groups', which take precedence.
type spread struct {
	node0
	store.Workflows
	store.Backlog
	store.Introspection
	store.Retention
	runs *mysql.Store
}

type node0 struct{ *mysql.Store }

// Capabilities: a start batch goes to the runs' node.
func (s spread) Capabilities() store.Capabilities {
	c := s.Store.Capabilities()
	c.BatchStarts = s.runs
	return c
}

func TestConformanceGalera(t *testing.T) {
	next := 0
	var n atomic.Int32
	var where storetest.Where[[]string] // each store's database, one URL per node
	storetest.Exercise(t, func(t *testing.T, now func() time.Time) store.Driver {
		urls := testdb.GaleraDB(t, fmt.Sprintf("_%d", n.Add(1)))
		s := freshURL(t, urls[0], clocked(now))
		mode, reason, err := s.ResolveLockMode(ctxT(t), store.LockAuto)
		if err != nil || mode != store.LockRow || reason != "wsrep/Galera cluster detected" {
			t.Fatalf("auto on Galera: %s %q %v", mode, reason, err)
		}
		// no multi-statement batches on Galera (see batched): no batch pool,
		// the whole budget is the application pool's
		if mysql.Batched(s) || mysql.BatchDB(s) != nil || s.DB().Stats().MaxOpenConnections != 20 {
			t.Fatalf("on Galera: batched %v, batch pool %v, application pool of %d", mysql.Batched(s), mysql.BatchDB(s), s.DB().Stats().MaxOpenConnections)
		}
		runs, other := open(t, urls[1], clocked(now)), open(t, urls[2], clocked(now))
		d := spread{node0: node0{s}, Workflows: runs, Backlog: runs, Introspection: other, Retention: other, runs: runs}
		return where.Remember(d, urls)
	}, storetest.Options{
		// every second handle is on the next node
		Reopen: func(t *testing.T, d store.Driver, now func() time.Time) store.Driver {
			next++
			return open(t, where.Of(d)[1+(next-1)%2], clocked(now))
		},
		Modes: []store.LockMode{store.LockRow},
		Tx: storetest.TxOptions{
			Pool: func(t *testing.T, d store.Driver) *sql.DB { return galeraPool(t, where.Of(d)[0]) },
			Bare: func(t *testing.T) *sql.DB {
				testdb.MariaDB(t, "mysuite_gbare")
				return userPool(t, "mysuite_gbare")
			},
			Levels:            txLevels,
			AwaitSeesRollback: true,
		},
	})
}

// galeraPool opens the application's own pool on the database of url (a
// Galera node's), with the DSN the store would derive from it.
func galeraPool(t *testing.T, url string) *sql.DB {
	t.Helper()
	r, err := dburl.Resolve(url, "")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", r.DSN)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(2)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
