// Store factories for tests: memory, a SQLite file, and fresh databases on
// the real PostgreSQL and MariaDB servers.
package schedule

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testdb"
)

type storeCase struct {
	name string
	url  string // "" for memory
	open func(t testing.TB) Store
}

// NewMemoryStore is a fresh in-process store, shared by the schedulers of
// a test as the replicas of one process would share it.
func NewMemoryStore() *memory.Store { return memory.New() }

// openURL opens and migrates a store for the test and closes it at cleanup.
func openURL(t testing.TB, url string) StoreCloser {
	t.Helper()
	s, err := OpenURL(context.Background(), url, "")
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// storeCases gives one case per backend; db names the test databases
// (voltro_t_sched_<db>) so parallel tests do not share them.
func storeCases(t *testing.T, db string, withMemory bool) []storeCase {
	t.Helper()
	var cs []storeCase
	if withMemory {
		mem := NewMemoryStore()
		cs = append(cs, storeCase{name: "memory", open: func(testing.TB) Store { return mem }})
	}
	sqlite := "sqlite:" + filepath.Join(t.TempDir(), "sched.db")
	pg := testdb.Postgres(t, "sched_"+db)
	maria := testdb.MariaDB(t, "sched_"+db)
	for _, c := range []struct{ name, url string }{{"sqlite", sqlite}, {"postgres", pg}, {"mariadb", maria}} {
		cs = append(cs, storeCase{name: c.name, url: c.url, open: func(t testing.TB) Store { return openURL(t, c.url) }})
	}
	return cs
}
