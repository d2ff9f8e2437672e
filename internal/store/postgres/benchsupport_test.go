package postgres_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestBenchSupport(t *testing.T) {
	var n atomic.Int32
	storetest.RunBenchSupport(t, func(t *testing.T) store.Driver {
		return open(t, testdb.Postgres(t, fmt.Sprintf("pgbench%d", n.Add(1))))
	})
}
