package postgres_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestBenchSupport(t *testing.T) {
	var n atomic.Int32
	storetest.RunBenchSupport(t, func(t *testing.T, now func() time.Time) store.Driver {
		return openClock(t, testdb.Postgres(t, fmt.Sprintf("pgbench%d", n.Add(1))), now)
	})
}
